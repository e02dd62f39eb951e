"""`python -m imprint.server`: write the handshake snapshot the daemon answers from."""

from imprint.server.handshake import write_handshake

if __name__ == "__main__":
    print(f"wrote {write_handshake()}")
