"""The module's directives, its documentation and its shipped configuration agree:
every directive of the command_rec table (parsed from the C source, the single
list) has a row in docs/configuration.md's table and a line in conf/qrtrack.conf
(commented out where it has no fixed default), and neither names a directive the
module lacks."""
import glob
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def module_directives():
    """{name: kind} of every AP_INIT_* entry in the glue's sources."""
    out = {}
    for path in glob.glob(os.path.join(ROOT, "mod_qrtrack", "mod_qrtrack*.c")):
        with open(path) as f:
            src = f.read()
        for kind, name in re.findall(r'\bAP_INIT_([A-Z0-9]+)\(\s*"([^"]+)"', src):
            assert name not in out, "directive %s declared twice" % name
            out[name] = kind
    return out


def documented_directives():
    """Directives named in the first column of docs/configuration.md's tables."""
    with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
        return set(re.findall(r'^\|\s*`(QRTrack\w+)', f.read(), re.M))


def conf_directives():
    """Directives set (or shown commented out) at the start of a line of
    conf/qrtrack.conf."""
    with open(os.path.join(ROOT, "conf", "qrtrack.conf")) as f:
        return set(re.findall(r'^\s*#?\s*(QRTrack\w+)\s', f.read(), re.M))


def test_the_command_table_is_found():
    names = module_directives()
    assert len(names) >= 18, names
    assert all(n.startswith("QRTrack") for n in names), names


def test_every_directive_is_documented_and_nothing_else():
    names = set(module_directives())
    documented = documented_directives()
    assert names - documented == set(), "undocumented in docs/configuration.md"
    assert documented - names == set(), "documented, but the module has no such directive"


def test_every_directive_is_shown_in_the_shipped_configuration_and_nothing_else():
    names = set(module_directives())
    shown = conf_directives()
    assert names - shown == set(), "missing from conf/qrtrack.conf"
    assert shown - names == set(), "in conf/qrtrack.conf, but the module lacks it"
