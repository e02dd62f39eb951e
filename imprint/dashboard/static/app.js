// Imprint dashboard: inline plan validation (the server's own validator) and nothing else.
"use strict";
(function () {
  const plan = document.getElementById("plan");
  const shown = document.getElementById("plan-error");
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (!plan || !shown || !meta) return;
  let timer = null;
  let sent = 0;
  async function check() {
    const mine = ++sent;
    const response = await fetch("/recall/validate", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": meta.content },
      body: JSON.stringify({ plan: plan.value }),
    });
    if (mine !== sent) return;  // a newer check is on its way
    const result = await response.json();
    shown.textContent = result.ok ? "" : result.error;
    plan.classList.toggle("invalid", !result.ok);
  }
  plan.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(check, 250);
  });
  if (plan.value.trim()) check();
})();
