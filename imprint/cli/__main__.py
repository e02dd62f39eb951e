"""`python -m imprint.cli`: the full command line."""

from imprint.cli import main

if __name__ == "__main__":
    main()
