"""session.py - replays an interactive Python session of docs/tutorial.md (tests/tutorial/tutorial.sh).

    python3 session.py STATEMENTS

STATEMENTS holds the session's statements, one per line (a line starting with "... " continues
the one before it). Each is run as the interpreter would run it typed at its prompt (the value of
an expression is printed with its repr), and printed the way the tutorial shows a session: the
statement after ">>> ", then its output; an exception as its last traceback line,
"TypeName: message".
"""
import sys


def main():
    with open(sys.argv[1]) as f:
        lines = f.read().splitlines()
    statements = []
    for line in lines:
        if line.startswith("... ") and statements:
            statements[-1].append(line[4:])
        else:
            statements.append([line])
    env = {"__name__": "__main__"}
    for st in statements:
        print(">>> " + st[0])
        for more in st[1:]:
            print("... " + more)
        sys.stdout.flush()
        try:
            exec(compile("\n".join(st) + "\n", "<stdin>", "single"), env)
        except Exception as e:  # shown as the interpreter's last traceback line
            print("%s: %s" % (type(e).__name__, e))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
