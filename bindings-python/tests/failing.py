"""A function that fails every time it is called, for the tests: `failing(make)` raises
`make(n)` on its n-th call (by default ConnectionError("fail n")); `f.raised` lists what
it raised, in order."""


def failing(make=lambda n: ConnectionError(f"fail {n}")):
    raised = []

    def f():
        e = make(len(raised) + 1)
        raised.append(e)
        raise e

    f.raised = raised
    return f
