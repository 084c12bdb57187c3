"""boinc-gateway: a REST gateway to BOINC volunteer computing."""

__version__ = "0.1.0"
