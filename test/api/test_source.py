"""The source keeps its seams: no file but the dialect's compares database driver
names (each difference between SQLite and PostgreSQL is a fact or a function of
qrt_dialect_t)."""
import ast
import os
import re

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "mod_qrtrack")


def test_only_the_dialect_files_name_the_drivers():
    found = []
    for fn in sorted(os.listdir(SRC)):
        if not fn.endswith((".c", ".h")) or fn.startswith("qrt_dialect"):
            continue
        with open(os.path.join(SRC, fn), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if re.search(r'"(sqlite3|pgsql)"|qrt_db_is_pgsql', line):
                    found.append("%s:%d: %s" % (fn, n, line.strip()))
    assert found == [], "\n".join(found)


def _sources():
    root = os.path.join(SRC, "..")
    for d in ("mod_qrtrack", "admin"):
        for fn in sorted(os.listdir(os.path.join(root, d))):
            if fn.endswith(".c"):
                with open(os.path.join(root, d, fn), encoding="utf-8") as f:
                    yield "%s/%s" % (d, fn), f.read()


def test_the_code_names_statements_only_through_compiled_names():
    """A statement is named in code by its SQL_<name> macro (tools/gen_statements.py
    makes one per statement of sql/statements, so a mistyped name fails the build),
    never by a string that would fail only when its call runs."""
    found = []
    for name, text in _sources():
        for m in re.finditer(r'qrt_db_(?:each|exec|select|select_int|each_rows|exec_rows)'
                             r'\(\s*[^,()]+,\s*[^,()]+,\s*"', text):
            found.append("%s: %s" % (name, text[m.start():m.end() + 40].split("\n")[0]))
        for block in re.findall(r'static const char \*const \w+\[\](?:\[\d+\])? = \{(.*?)\};',
                                text, re.S):
            found += ["%s: %s" % (name, l) for l in re.findall(r'"(?:qrt|report)_[a-z0-9_]+"', block)]
    assert found == [], "\n".join(found)


def test_no_test_file_imports_another():
    """Shared helpers live in test/api/lib; a test file imports from there (or from
    conftest), never from another test file."""
    here = os.path.dirname(__file__)
    found = []
    for fn in sorted(os.listdir(here)):
        if fn.endswith(".py"):
            with open(os.path.join(here, fn), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if re.match(r"\s*(from|import)\s+test_\w+", line):
                        found.append("%s:%d: %s" % (fn, n, line.strip()))
    assert found == [], "\n".join(found)


def test_tests_reach_the_library_not_conftest_internals():
    """conftest only re-exports lib: a test that swaps conftest's private state would
    swap nothing; lib.pg.own_cluster() is the way to a cluster of one's own."""
    here = os.path.dirname(__file__)
    found = []
    for fn in sorted(os.listdir(here)):
        if fn.startswith("test_") and fn.endswith(".py"):
            with open(os.path.join(here, fn), encoding="utf-8") as f:
                found += ["%s:%d" % (fn, n) for n, line in enumerate(f, 1)
                          if re.search(r"conftest\._", line)]
    assert found == [], found


def test_test_files_wait_through_the_library():
    """A test waits for a condition with lib.wait.wait_until (a deadline, a message on
    timeout), not with a loop of its own: no `while` loop in a test file calls
    time.sleep (a sleep that is the behaviour under test stands alone, with its reason)."""
    here = os.path.dirname(__file__)
    found = []
    for fn in sorted(os.listdir(here)):
        if not fn.endswith(".py"):
            continue
        with open(os.path.join(here, fn), encoding="utf-8") as f:
            tree = ast.parse(f.read(), fn)
        for loop in ast.walk(tree):
            if isinstance(loop, ast.While):
                found += ["%s:%d" % (fn, node.lineno) for node in ast.walk(loop)
                          if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                          and node.func.attr == "sleep"
                          and isinstance(node.func.value, ast.Name)
                          and node.func.value.id == "time"]
    assert found == [], found
