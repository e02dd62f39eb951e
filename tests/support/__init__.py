"""Helpers the tests share: servers, fakes, corpora, clients, one module per topic.

No test module imports another test module; what two tests share lives here.
"""
