"""`python -m trainforge`: the `trainforge` command with this interpreter."""

from trainforge.cli import main

main()
