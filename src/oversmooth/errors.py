"""The one exception type for bad user input."""


class UsageError(ValueError):
    """Bad input from the user (a missing file, an unknown name, a value out of range).

    The message is one line naming the problem and the fix; the CLI prints it and exits 2.
    """
