"""``python -m bgw``."""

from bgw.main import main

main()
