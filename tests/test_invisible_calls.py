"""REG003's walk visits only the top-level statements whose lines name a register function
(checks/ruleset/reading/reg003_invisible_registration.py). A derived answer must equal the source answer:
here the narrowed walk is compared with the whole module's walk on many composed modules."""

import ast
import random

from checks.ruleset.reading import reg003_invisible_registration as reg003

FUNCTIONS = {"register_cuda_ci", "register_cpu_ci", "register_amd_ci"}

# Statements that hide a register call from the runner in every way the rule knows, spread over
# lines (the name on a later line than the statement's start), in decorators, in nested scopes.
PIECES = [
    'register_cuda_ci(est_time=60, suite="stage-b-1-gpu")\n',
    'from tests.ci.ci_register import register_cuda_ci, register_cpu_ci\n',
    '# register_cuda_ci(est_time=1, suite="in-a-comment")\n',
    '"""A docstring naming register_amd_ci."""\n',
    'x = register_cuda_ci(est_time=60, suite="assigned")\n',
    'value = (\n    ci_register.\n    register_cpu_ci(est_time=5, suite="stage-a-cpu")\n)\n',
    'if True:\n    register_amd_ci(est_time=60, suite="nightly-amd")\n',
    'for _ in range(1):\n    pass\nelse:\n    register_cuda_ci(est_time=1, suite="for-else")\n',
    '@decorate(\n    register_cuda_ci(est_time=1, suite="decorator"),\n)\ndef f():\n    return 1\n',
    '@decorate\nclass C:\n    register_cpu_ci(est_time=1, suite="class-body")\n',
    'def g():\n    def h():\n        register_amd_ci(est_time=1, suite="nested")\n    return h\n',
    'handler = lambda: register_cuda_ci(est_time=1, suite="lambda")\n',
    'with open("f") as fh:\n    register_cpu_ci(est_time=1, suite="with")\n',
    'try:\n    pass\nexcept Exception:\n    ci.register_cuda_ci(est_time=1, suite="attr-in-try")\n',
    'def unrelated(a, b):\n    return a + b\n',
    'CONSTANT = {"k": [1, 2, 3]}\n',
    'print(register_cuda_ci)\n',
    'ci.register_amd_ci(est_time=1, suite="attribute")\n',
    'match 1:\n    case 1:\n        register_cuda_ci(est_time=1, suite="match")\n',
]

NO_ALIAS_WALKS_ALL = {"zz_not_an_alias": "register_cuda_ci"}  # an alias makes the walk whole


def both(source: str):
    tree = ast.parse(source)
    lines = source.split("\n")
    narrowed = reg003.invisible_calls("t.py", lines, tree, FUNCTIONS, {})
    whole = reg003.invisible_calls("t.py", lines, tree, FUNCTIONS, NO_ALIAS_WALKS_ALL)
    return narrowed, whole


def test_the_narrowed_walk_finds_what_the_whole_walk_finds():
    rng = random.Random(28)
    found = 0
    for _ in range(400):
        source = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 9)))
        narrowed, whole = both(source)
        assert narrowed == whole, source
        found += len(whole)
    assert found > 400  # the composed modules do hide calls: the comparison is not of empty lists


def test_a_file_whose_mentions_are_all_in_comments_walks_nothing():
    source = "# register_cuda_ci is how a test registers\nimport os\n\ndef f():\n    return os.sep\n"
    assert reg003._statements_mentioning(ast.parse(source), source.split("\n"), FUNCTIONS) == []
    assert both(source) == ([], [])


def test_a_decorator_line_counts_as_its_statements():
    source = '@decorate(register_cuda_ci(est_time=1, suite="s"))\ndef f():\n    pass\n'
    tree = ast.parse(source)
    assert reg003._statements_mentioning(tree, source.split("\n"), FUNCTIONS) == [tree.body[0]]
    narrowed, whole = both(source)
    assert len(narrowed) == 1 and narrowed == whole
