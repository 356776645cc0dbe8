#!/usr/bin/env python3
"""tests/check-design-doc.py: doc/design.md against the code it describes.

usage: tests/check-design-doc.py [SRCDIR]   (default: the tree this script is in)

Checks what drifts without anyone noticing when the code changes:
- the connection machine: the state and event counts the text states, every
  state and event of lib/conn/conn_fsm.h in the drawing and no other name in
  it, the `*` marks on exactly the events whose row reports the connection up
  (CA_REPORT_UP in lib/conn/conn_fsm.c), and every CS_/CE_/CA_ name the page
  uses still in the header;
- the layers: the "may include" column of the table against LAYERS in
  tests/check-layers.py, every lib/*/*.c named in the layers section, and
  every lib/ or include/ path and every backquoted x.c / x.h the page names
  still there.

Exit 0 when all hold; 1 otherwise, with one line per problem. Always ends
with "design doc: N states, N events, N layers, N files, N problems".
"""
import importlib.util
import os
import re
import sys

DOC = os.path.join('doc', 'design.md')
FSM_H = os.path.join('lib', 'conn', 'conn_fsm.h')
FSM_C = os.path.join('lib', 'conn', 'conn_fsm.c')
LAYERS_PY = os.path.join('tests', 'check-layers.py')

# Words of the state drawing that are neither states nor events.
DRAWING_WORDS = {'QP', 'INIT', 'RTR', 'RTS', 'ERR', 'CM', 'SRQ', 'WQE', 'THE', 'FINAL', 'CALLBACK'}
# Backquoted file names the page uses as examples, not as files.
EXAMPLE_FILES = {'x.c', 'x.h', 'foo.c'}
# Paths checked for existence: sources, scripts and the version script, not build products.
PATH_EXT = ('.c', '.h', '.map', '.sh', '.py', '.mk')

COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def read(root, path):
    with open(os.path.join(root, path), errors='replace') as fh:
        return fh.read()


def enum_names(text, name, prefix):
    """The members of `enum name` less their prefix and the closing *_COUNT, in order."""
    m = re.search(r'enum\s+%s\s*\{(.*?)\}' % name, COMMENT.sub(' ', text), re.S)
    if not m:
        return None
    out = []
    for item in m.group(1).split(','):
        ident = item.split('=')[0].strip()
        if ident and ident != prefix + 'COUNT':
            out.append(ident[len(prefix):] if ident.startswith(prefix) else ident)
    return out


def section(doc, heading):
    """The text from the line starting with heading to the next heading of the same level."""
    level = heading.split(' ')[0]
    m = re.search(r'^%s.*?$(.*?)(?=^%s |\Z)' % (re.escape(heading), re.escape(level)), doc, re.M | re.S)
    return m.group(1) if m else None


def check_machine(root, doc, problems):
    """Counts, drawing and CS_/CE_/CA_ names. Returns (states, events)."""
    hdr = read(root, FSM_H)
    states = enum_names(hdr, 'conn_state', 'CS_')
    events = enum_names(hdr, 'conn_event', 'CE_')
    actions = enum_names(hdr, 'conn_action', 'CA_')
    if not states or not events or actions is None:
        problems.append('%s: enum conn_state, conn_event or conn_action not found' % FSM_H)
        return [], []

    for n, what, enum in ((len(states), 'states', 'conn_state'), (len(events), 'events', 'conn_event')):
        said = re.findall(r'(\d+)\s+%s\s+\(`enum %s`\)' % (what, enum), doc)
        if not said:
            problems.append('%s: no "N %s (`enum %s`)" found (the code has %d)' % (DOC, what, enum, n))
        for s in said:
            if int(s) != n:
                problems.append('%s: says %s %s (`enum %s`); %s has %d' % (DOC, s, what, enum, FSM_H, n))

    text = section(doc, "## The connection's states")
    m = re.search(r'^```\n(.*?)^```', text or '', re.M | re.S)
    if not m:
        problems.append("%s: no drawing under \"## The connection's states\"" % DOC)
    else:
        drawing = m.group(1)
        words = set(re.findall(r'\b[A-Z][A-Z0-9_]*[A-Z0-9]\b', drawing))
        for s in states:
            if s not in words:
                problems.append('%s: the drawing lacks state %s (CS_%s)' % (DOC, s, s))
        for e in events:
            if e not in words:
                problems.append('%s: the drawing lacks event %s (CE_%s)' % (DOC, e, e))
        known = set(states) | set(events) | {'CA_' + a for a in actions} | DRAWING_WORDS
        for w in sorted(words - known):
            problems.append('%s: the drawing names %s, which %s has not (no CS_%s, CE_%s or %s)' % (
                DOC, w, FSM_H, w, w, w if w.startswith('CA_') else 'CA_' + w))
        # `*` marks the transitions that call on_connect(0): CA_REPORT_UP rows.
        table = COMMENT.sub(' ', read(root, FSM_C))
        up = {e for _, e, _, acts in re.findall(
            r'\[CS_(\w+)\]\s*\[CE_(\w+)\]\s*=\s*ROW\(\s*CS_(\w+)\s*,([^)]*)\)', table) if 'CA_REPORT_UP' in acts}
        starred = set(re.findall(r'\b([A-Z][A-Z0-9_]*) \*', drawing))
        for e in sorted(up - starred):
            problems.append('%s: the drawing does not star %s, whose row in %s has CA_REPORT_UP' % (DOC, e, FSM_C))
        for e in sorted(starred - up):
            problems.append('%s: the drawing stars %s, but no row of %s reports up on it' % (DOC, e, FSM_C))

    # Every CS_/CE_/CA_ name of the page (CS_ACCEPT_* is a prefix).
    names = {'CS_': states, 'CE_': events, 'CA_': actions}
    for pre, rest in sorted(set(re.findall(r'\b(C[SEA]_)([A-Z0-9_]*\*?)', doc))):
        if rest.endswith('*'):
            ok = any(n.startswith(rest[:-1]) for n in names[pre])
        else:
            ok = rest in names[pre]
        if not ok:
            problems.append('%s: names %s%s, which %s does not declare' % (DOC, pre, rest, FSM_H))
    return states, events


def load_layers(root):
    spec = importlib.util.spec_from_file_location('check_layers', os.path.join(root, LAYERS_PY))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.LAYERS


def check_layers(root, doc, problems):
    """The layer table against check-layers.py, and the files of the layers section. Returns (layers, files)."""
    layers = load_layers(root)
    text = section(doc, '## The layers in one picture')
    if text is None:
        problems.append('%s: no "## The layers in one picture" section' % DOC)
        return 0, 0
    rows = {}
    for folder, may in re.findall(r'^\| `lib/(\w+)/` \| ([^|]*) \|', text, re.M):
        may = may.strip()
        if may == 'nothing':
            rows[folder] = []
        elif may.startswith('every folder'):
            rows[folder] = ['*']
        else:
            rows[folder] = [w.strip() for w in may.split(',')]
    for folder in sorted(set(layers) | set(rows)):
        if folder not in rows:
            problems.append('%s: the layer table has no row for lib/%s/ (%s has one)' % (DOC, folder, LAYERS_PY))
        elif folder not in layers:
            problems.append('%s: the layer table has lib/%s/, which %s does not know' % (DOC, folder, LAYERS_PY))
        elif sorted(rows[folder]) != sorted(layers[folder]):
            problems.append('%s: lib/%s/ may include "%s" says the table; %s says "%s"' % (
                DOC, folder, ', '.join(rows[folder]) or 'nothing', LAYERS_PY,
                ', '.join(layers[folder]) or 'nothing'))

    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, 'lib'))
                   for f in fs if f.endswith('.c'))
    for f in files:
        rel = os.path.relpath(f, root)
        if not re.search(r'(?<![\w.-])%s\b' % re.escape(os.path.basename(f)), text):
            problems.append('%s: not named in %s\'s "The layers in one picture" (say what it is for there)' % (rel, DOC))
    return len(rows), len(files)


def check_paths(root, doc, problems):
    """lib/ and include/ paths, and backquoted bare x.c / x.h names, that no longer exist."""
    for p in sorted(set(re.findall(r'(?<![\w/.-])((?:lib|include)/[\w./-]*\w)', doc))):
        if p.endswith(PATH_EXT) and not os.path.exists(os.path.join(root, p)):
            problems.append('%s: names %s, which does not exist' % (DOC, p))
    bases = set()
    for top in ('lib', 'include', 'tests', 'tools', 'samples'):
        for _, _, fs in os.walk(os.path.join(root, top)):
            bases.update(fs)
    for tick in sorted(set(re.findall(r'`([^`\n]+)`', doc))):
        for n in re.findall(r'(?<![\w./-])([\w.-]+\.[ch])(?![\w/])', tick):
            if n not in bases and n not in EXAMPLE_FILES:
                problems.append('%s: names `%s`, which no file under lib/, include/, tests/, tools/ or samples/ is' % (DOC, n))


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    doc = read(root, DOC)
    problems = []
    states, events = check_machine(root, doc, problems)
    nlayers, nfiles = check_layers(root, doc, problems)
    check_paths(root, doc, problems)
    for p in problems:
        print(p)
    print('design doc: %d states, %d events, %d layers, %d files, %d problems' % (
        len(states), len(events), nlayers, nfiles, len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
