"""The directives: the module's command table, docs/configuration.md's table and Debian's
conf/qrtrack.conf name the same directives, and the values the conf file sets are the
documented defaults (so that neither file can drift from the code)."""
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def _read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def module_directives():
    """Every directive of the command_rec tables of the glue (AP_INIT_* entries)."""
    names = set()
    src = os.path.join(ROOT, "mod_qrtrack")
    for fn in sorted(os.listdir(src)):
        if fn.startswith("mod_qrtrack") and fn.endswith(".c"):
            names |= set(re.findall(r'AP_INIT_[A-Z0-9_]+\(\s*"([A-Za-z]+)"',
                                    _read(os.path.join("mod_qrtrack", fn))))
    return names


def documented():
    """Directive -> default, from docs/configuration.md's table."""
    rows = {}
    for m in re.finditer(r"^\| `(QRTrack[A-Za-z]+)[^`]*` \| ([^|]*) \|",
                         _read("docs/configuration.md"), re.M):
        rows[m.group(1)] = m.group(2).strip()
    return rows


def conf_lines():
    """Directive -> (value, commented), from conf/qrtrack.conf."""
    out = {}
    for line in _read("conf/qrtrack.conf").splitlines():
        m = re.match(r"\s*(#?)\s*(QRTrack[A-Za-z]+)\s+(.*)$", line)
        if m:
            out.setdefault(m.group(2), (m.group(3).strip(), m.group(1) == "#"))
    return out


def test_every_directive_is_documented_and_nothing_else():
    mod, doc = module_directives(), set(documented())
    assert len(mod) >= 18, mod
    assert mod - doc == set(), "undocumented in docs/configuration.md"
    assert doc - mod == set(), "documented but not in the module"


def test_conf_file_shows_every_directive_and_sets_only_defaults():
    mod, conf, doc = module_directives(), conf_lines(), documented()
    assert mod - set(conf) == set(), "missing from conf/qrtrack.conf"
    assert set(conf) - mod == set(), "conf/qrtrack.conf names unknown directives"
    for name, (value, commented) in conf.items():
        if commented:
            continue
        # A directive set in the shipped file must set its documented default.
        default = re.sub(r"[`*]", "", doc[name]).split(" ")[0]
        assert value == default, (name, value, doc[name])
