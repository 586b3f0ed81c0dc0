"""The source keeps its seams: no file but the dialect's compares database driver
names (each difference between SQLite and PostgreSQL is a fact or a function of
qrt_dialect_t)."""
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


def test_every_statement_the_code_names_exists():
    """A label passed to the store's calls is one of the statement tables' (a mistyped
    one would only fail when that call runs)."""
    defined, used = set(), {}
    for name, text in _sources():
        defined |= set(re.findall(r'\{\s*"([a-z][a-z0-9_]*)",', text))
        prefixes = re.findall(r'RG_STMTS\("([a-z_]+)"', text)
        suffixes = re.findall(r'\{ L "([a-z0-9]+)"', text)
        defined |= {p + s for p in prefixes for s in suffixes}
        for m in re.finditer(r'qrt_db_(?:each|exec|select|select_int|each_rows|exec_rows)'
                             r'\(\s*[^,()]+,\s*[^,()]+,\s*"([a-z][a-z0-9_]*)"', text):
            used.setdefault(m.group(1), name)
        # the tables of names the code picks from at run time
        for block in re.findall(r'static const char \*const \w+\[\](?:\[\d+\])? = \{(.*?)\};',
                                text, re.S):
            for label in re.findall(r'"((?:qrt|report)_[a-z0-9_]+)"', block):
                used.setdefault(label, name)
    assert len(used) > 100, len(used)
    missing = {k: v for k, v in used.items() if k not in defined}
    assert missing == {}, missing
