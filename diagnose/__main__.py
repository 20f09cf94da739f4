"""`python -m diagnose …` runs the vdiag command, with the interpreter that runs it."""

if __name__ == "__main__":
    from .cli.main import process_main

    process_main()
