#!/usr/bin/env python3
"""tests/check-layers.py: lib/'s #include "..." lines against the layer table, and no cycle among lib/'s units.

usage: tests/check-layers.py [SRCDIR]   (default: the tree this script is in)

Exit 0 when every include follows the table below and no units form a cycle;
1 otherwise, with one line per broken rule naming the file, the include and
the rule. Always ends with "layers: N files, N violations, N cycles".
"""
import os
import re
import sys

# The layers (folders under lib/) and the folders each may include, bottom up.
# A folder may always include itself. "*" is every folder of the table.
LAYERS = {
    'base': [],                                  # errors, logging, version, small containers
    'wire': ['base'],                            # pure codecs: handshake, auth, replay, opts, flow, addr, imm.h
    'qpfsm': ['base'],                           # the QP state machine as data
    'srqpool': ['base'],                         # one SRQ and its slabs
    'loop': ['base'],                            # epoll set, watches, heap timers, deferred work, name lookup
    'device': ['base', 'qpfsm', 'srqpool', 'loop', 'wire'],
    'conn': ['*'],                               # the connection state machine and the public API
}
# Always allowed: what the top-level config writes, and the public header.
ALWAYS = {'config.h'}
PUBLIC = os.path.join('include', 'easyrdma.h')

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def sources(root):
    """lib/'s .c and .h files, relative to root, sorted."""
    out = []
    for d, dirs, files in os.walk(os.path.join(root, 'lib')):
        dirs.sort()
        out += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith(('.c', '.h'))]
    return sorted(out)


def folder(path):
    """The layer a lib/ file belongs to: its first folder under lib/ ('' for lib/ itself)."""
    parts = path.split(os.sep)
    return parts[1] if len(parts) > 2 else ''


def folder_name(f):
    return 'lib/%s' % f if f else 'lib/ (top)'


def includes(root, path):
    """The quoted includes of a file, comments removed: (line number, name)."""
    with open(os.path.join(root, path), errors='replace') as fh:
        text = fh.read()
    # Blank comments out but keep their newlines, so line numbers stay true.
    text = COMMENT.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)
    return [(text.count('\n', 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)]


def resolve(root, path, name):
    """Where the compiler finds "name" from path: its own folder, then -I include, then -I lib."""
    for base in (os.path.dirname(path), 'include', 'lib'):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def may_include(src, dst):
    allowed = LAYERS[src]
    return dst == src or dst in allowed or ('*' in allowed and dst in LAYERS)


def rule_text(src):
    allowed = LAYERS[src]
    if '*' in allowed:
        return 'every folder of the table'
    return ', '.join('lib/' + a for a in allowed) or 'nothing'


def check_include(path, line, name, target):
    """The broken rule of one include, or None."""
    where = '%s:%d: #include "%s"' % (path, line, name)
    if target is None:
        return '%s: found neither beside the file nor under include/ or lib/' % where
    where += ' (%s)' % target
    if target == PUBLIC:
        return None
    if not target.startswith('lib' + os.sep):
        return '%s: outside lib/ (only include/easyrdma.h is)' % where
    src, dst = folder(path), folder(target)
    if src not in LAYERS:
        return None  # reported once for the file
    if dst not in LAYERS:
        return '%s: %s is not in the layer table' % (where, folder_name(dst))
    if not may_include(src, dst):
        return '%s: lib/%s may not include lib/%s (lib/%s may include: %s)' % (
            where, src, dst, src, rule_text(src))
    return None


def unit(path):
    """x.c and x.h are one unit: the path without its extension."""
    return os.path.splitext(path)[0]


def unit_edges(targets, owned):
    """Edges between units that have a .c file. A header without one (a
    layer's private header, a header of constants) is no unit of its own:
    what it includes counts for the files that include it."""
    def reach(path, seen):
        for t in targets.get(path, ()):
            if t in seen:
                continue
            seen.add(t)
            if unit(t) not in owned:
                reach(t, seen)
        return seen
    edges, via = {}, {}
    for path in targets:
        if unit(path) not in owned:
            continue
        for t in reach(path, set()):
            if unit(t) in owned and unit(t) != unit(path):
                edges.setdefault(unit(path), set()).add(unit(t))
                via.setdefault((unit(path), unit(t)), (path, t))
    return edges, via


def strongly_connected(edges):
    """Tarjan's algorithm, iterative: the components of more than one unit."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def one_cycle(comp, edges):
    """A shortest way round from the component's first unit back to it (breadth first)."""
    first, members = comp[0], set(comp)
    prev, frontier = {first: None}, [first]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ())):
                if w == first:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [first]
                if w in members and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp + [first]


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    files = sources(root)
    problems = []
    targets, why = {}, {}
    for path in files:
        if folder(path) not in LAYERS:
            problems.append('%s: %s is not in the layer table (known: %s)' % (
                path, folder_name(folder(path)), ', '.join('lib/' + f for f in LAYERS)))
        for line, name in includes(root, path):
            if name in ALWAYS:
                continue
            target = resolve(root, path, name)
            broken = check_include(path, line, name, target)
            if broken:
                problems.append(broken)
            if target and target.startswith('lib' + os.sep):
                targets.setdefault(path, []).append(target)
                why.setdefault((path, target), '%s:%d includes "%s"' % (path, line, name))
    owned = {unit(p) for p in files if p.endswith('.c')}
    edges, via = unit_edges(targets, owned)
    for p in problems:
        print(p)
    cycles = strongly_connected(edges)
    for comp in cycles:
        ring = one_cycle(comp, edges)
        print('cycle among %d units (%s): %s' % (len(comp), ' '.join(comp), ' -> '.join(ring)))
        for a, b in zip(ring, ring[1:]):
            path, t = via[(a, b)]
            print('  %s' % (why.get((path, t)) or '%s reaches %s through a header without a .c' % (path, t)))
    print('layers: %d files, %d violations, %d cycles' % (len(files), len(problems), len(cycles)))
    return 1 if problems or cycles else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
