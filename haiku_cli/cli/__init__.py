"""The `haiku` command line: parse, call one library function, render."""
