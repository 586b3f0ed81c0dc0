"""A JSON Schema 2020-12 checker compiled to Python closures, for the subset of keywords
that openapi/qrtrack.json uses, with jsonschema's (the reference) semantics.

The OpenAPI checker validates every API response of the suite; jsonschema walks a large
body at a few microseconds a node, which made it one of the suite's larger costs. A
schema compiles here into nested closures that answer only valid or not; jsonschema still
gives the message of any failure, and the checker compares the two on a sample of the
suite's responses and their mutations (lib/openapi.py), so that this one can never be the
more lenient. compile() raises Unsupported for any keyword or form it does not model; the
caller then uses jsonschema for that schema."""
import re

from jsonschema._utils import equal, unbool


class Unsupported(Exception):
    """The schema uses a keyword or a form that is not modelled here."""


# Keywords that assert nothing (annotations); `format` asserts nothing either, as the
# reference validator is made without a format checker.
ANNOTATIONS = {"description", "default", "examples", "title", "contentMediaType",
               "contentEncoding", "format", "deprecated", "readOnly", "writeOnly",
               "$comment"}


def _is_integer(x):
    # draft 6 and later: a float with no fraction is an integer; a bool is not
    return (isinstance(x, int) and not isinstance(x, bool)) or \
        (isinstance(x, float) and x.is_integer())


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


TYPES = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "integer": _is_integer,
    "number": _is_number,
}


def _always(_x):
    return True


def _never(_x):
    return False


def compile_schema(schema):
    """A function of an instance: True when it is valid under schema."""
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        raise Unsupported("a schema that is not an object: %r" % (schema,))
    checks = []
    for key, value in schema.items():
        if key in ANNOTATIONS or key in ("then", "else"):
            continue
        make = _KEYWORDS.get(key)
        if make is None:
            raise Unsupported("keyword %s" % key)
        checks.append(make(value, schema))
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    checks = tuple(checks)

    def check(x):
        for c in checks:
            if not c(x):
                return False
        return True
    return check


def _type(value, _schema):
    names = [value] if isinstance(value, str) else list(value)
    try:
        tests = tuple(TYPES[n] for n in names)
    except KeyError as e:
        raise Unsupported("type %s" % e)
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(t(x) for t in tests)


def _properties(value, _schema):
    subs = tuple((k, compile_schema(s)) for k, s in value.items())

    def check(x):
        if isinstance(x, dict):
            for k, c in subs:
                if k in x and not c(x[k]):
                    return False
        return True
    return check


def _required(value, _schema):
    names = tuple(value)
    return lambda x: not isinstance(x, dict) or all(k in x for k in names)


def _additional_properties(value, schema):
    if "patternProperties" in schema:
        raise Unsupported("patternProperties")
    known = frozenset(schema.get("properties", ()))
    if value is False:
        return lambda x: not isinstance(x, dict) or all(k in known for k in x)
    sub = compile_schema(value)

    def check(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k not in known and not sub(v):
                    return False
        return True
    return check


def _items(value, schema):
    if "prefixItems" in schema:
        raise Unsupported("prefixItems")
    sub = compile_schema(value)

    def check(x):
        if isinstance(x, list):
            for v in x:
                if not sub(v):
                    return False
        return True
    return check


def _bound(test):
    def make(value, _schema):
        return lambda x: not _is_number(x) or test(x, value)
    return make


def _length(test):
    def make(value, _schema):
        return lambda x: not isinstance(x, str) or test(len(x), value)
    return make


def _count(kind, test):
    def make(value, _schema):
        return lambda x: not isinstance(x, kind) or test(len(x), value)
    return make


def _pattern(value, _schema):
    rx = re.compile(value)
    return lambda x: not isinstance(x, str) or rx.search(x) is not None


def _enum(value, _schema):
    enums = list(value)

    def check(x):
        # as jsonschema: True and False are not 1 and 0
        if x == 0 or x == 1:
            u = unbool(x)
            return any(u == unbool(e) for e in enums)
        return x in enums
    return check


def _const(value, _schema):
    return lambda x: equal(x, value)


def _all_of(value, _schema):
    subs = tuple(compile_schema(s) for s in value)
    return lambda x: all(c(x) for c in subs)


def _any_of(value, _schema):
    subs = tuple(compile_schema(s) for s in value)
    return lambda x: any(c(x) for c in subs)


def _one_of(value, _schema):
    subs = tuple(compile_schema(s) for s in value)

    def check(x):
        n = 0
        for c in subs:
            if c(x):
                n += 1
                if n > 1:
                    return False
        return n == 1
    return check


def _if(value, schema):
    cond = compile_schema(value)
    then = compile_schema(schema.get("then", True))
    other = compile_schema(schema.get("else", True))
    return lambda x: then(x) if cond(x) else other(x)


def _evaluated(schema):
    """A function of a valid instance (an object): the set of its keys that schema's
    properties and in-place subschemas evaluate, as jsonschema counts them for
    unevaluatedProperties. Forms whose counting jsonschema does its own way
    (additionalProperties, patternProperties, nested unevaluatedProperties) are not
    modelled."""
    if schema is True or schema is False:
        return lambda x: set()
    for key in ("additionalProperties", "patternProperties", "unevaluatedProperties",
                "dependentSchemas", "$ref"):
        if key in schema:
            raise Unsupported("%s beside unevaluatedProperties" % key)
    names = tuple(schema.get("properties", ()))
    parts = []
    for sub in schema.get("allOf", ()):
        parts.append((compile_schema(sub), _evaluated(sub)))
    for key in ("oneOf", "anyOf"):
        for sub in schema.get(key, ()):
            parts.append((compile_schema(sub), _evaluated(sub)))
    if "if" in schema:
        cond, cond_ev = compile_schema(schema["if"]), _evaluated(schema["if"])
        then_ev = _evaluated(schema.get("then", True))
        else_ev = _evaluated(schema.get("else", True))

        def if_keys(x):
            return (cond_ev(x) | then_ev(x)) if cond(x) else else_ev(x)
    else:
        if_keys = None
    parts = tuple(parts)

    def evaluated(x):
        keys = {k for k in names if k in x}
        for valid, ev in parts:
            if valid(x):
                keys |= ev(x)
        if if_keys is not None:
            keys |= if_keys(x)
        return keys
    return evaluated


def _unevaluated_properties(value, schema):
    if not isinstance(value, bool):
        raise Unsupported("unevaluatedProperties with a schema")
    ev = _evaluated({k: v for k, v in schema.items() if k != "unevaluatedProperties"})
    sub = compile_schema(value)

    def check(x):
        if isinstance(x, dict):
            done = ev(x)
            for k, v in x.items():
                if k not in done and not sub(v):
                    return False
        return True
    return check


_KEYWORDS = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional_properties,
    "items": _items,
    "minimum": _bound(lambda x, v: x >= v),
    "maximum": _bound(lambda x, v: x <= v),
    "exclusiveMinimum": _bound(lambda x, v: x > v),
    "exclusiveMaximum": _bound(lambda x, v: x < v),
    "minLength": _length(lambda n, v: n >= v),
    "maxLength": _length(lambda n, v: n <= v),
    "minItems": _count(list, lambda n, v: n >= v),
    "maxItems": _count(list, lambda n, v: n <= v),
    "minProperties": _count(dict, lambda n, v: n >= v),
    "maxProperties": _count(dict, lambda n, v: n <= v),
    "pattern": _pattern,
    "enum": _enum,
    "const": _const,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "if": _if,
    "unevaluatedProperties": _unevaluated_properties,
}


# Values that break some schema or other: wrong types, empty and long strings, edges
# of numbers, an integer as a float, a bool where a number may be.
WRONG = [None, True, False, 0, 1, -1, 1.0, 1.5, 2 ** 53, "", "x" * 300, "not a date",
         [], [None], {}, {"_unknown": 1}]
_turn = [0]


def _paths(instance, limit):
    """Paths (lists of keys) to instance's nodes, breadth first, at most limit."""
    out, queue = [], [[]]
    while queue and len(out) < limit:
        path = queue.pop(0)
        out.append(path)
        node = _at(instance, path)
        if isinstance(node, dict):
            queue.extend(path + [k] for k in node)
        elif isinstance(node, list):
            queue.extend(path + [i] for i in range(min(len(node), 3)))
    return out


def _at(instance, path):
    for k in path:
        instance = instance[k]
    return instance


def _copy(x):
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


def mutations(instance, nodes=4):
    """Copies of instance, each changed in one place: a node replaced by a value of WRONG,
    an object's key removed or one added, an array emptied or given a null. The nodes
    and the values turn from call to call, so that a run's samples cover many."""
    paths = _paths(instance, 64)
    out = []
    for i in range(nodes):
        _turn[0] += 1
        path = paths[(_turn[0] * 7) % len(paths)]
        node = _at(instance, path)
        for value in (WRONG[_turn[0] % len(WRONG)], WRONG[(_turn[0] * 5 + 3) % len(WRONG)]):
            if path:
                m = _copy(instance)
                _at(m, path[:-1])[path[-1]] = value
                out.append(m)
        if isinstance(node, dict) and node:
            m = _copy(instance)
            del _at(m, path)[list(node)[_turn[0] % len(node)]]
            out.append(m)
            m = _copy(instance)
            _at(m, path)["_unknown"] = WRONG[_turn[0] % len(WRONG)]
            out.append(m)
        elif isinstance(node, list):
            m = _copy(instance)
            _at(m, path).append(None)
            out.append(m)
            m = _copy(instance)
            _at(m, path).clear()
            out.append(m)
    return out
