import typed_usage


def test_the_typed_example_runs():
    typed_usage.main()
    assert typed_usage.calls == 2
