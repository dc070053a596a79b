#!/usr/bin/env python3
"""layers.py: the layering checks of maint/check-layers, by source analysis only.

    layers.py SRC_DIR            the checks on SRC_DIR (gdr's src/) and on the include/
                                 beside it (the public headers), when there is one
    layers.py --self-test TMPDIR builds small trees under TMPDIR and checks the checker

0. include/ (the installed public headers) is the lowest layer: its files include nothing
   under src/ and no MPICH-internal header, use no MPICH-internal identifier, and every
   quoted #include of theirs names a file of include/, so that -I$PREFIX/include is all a
   user's program needs.  src/ may include include/.
1. The plain layers (src/common, src/rma, src/gpu, src/netmod/verbs) and the adapters
   between them (src/adapt) include no MPICH or netmod-level header and use no MPICH
   identifier, so that they build and unit-test without MPICH.
2. Includes point down the layers (LAYER_RANKS): src/common (what they all share, the
   status codes) at the bottom, then src/gpu and src/netmod/verbs, each knowing nothing of
   the other; src/rma above them (it defines the seams they
   are adapted to, and they know nothing of it); src/adapt above those three (the adapters
   that implement src/rma's seams over src/gpu and src/netmod/verbs: where they are wired
   together without MPICH); src/netmod's own files on top.  A file includes headers of its
   own layer, of lower layers and of include/ only.
3. No #include cycles among the files under src/ and include/.
4. No call cycles between files: A -> B when code in A (function bodies, initializers,
   macro bodies) names a function that B alone defines among the definitions A can
   reach: a .c file's static functions are its own, and a libc function the memory
   hooks replace (free, munmap...) is no dependency on the hooking file.

Nothing is preprocessed (MPICH need not be built): comments and string literals are
blanked, then a token scan at brace depth 0 finds function definitions.  Both branches
of every #if are read, which is what a layering rule wants anyway.

Prints "PASS layers: ..." / "FAIL layers: ..." lines (details indented under a FAIL);
exits 0 when every check passes, 1 otherwise, 2 on a usage error.
"""
import bisect
import fnmatch
import os
import re
import sys

SOURCE_SUFFIXES = ('.c', '.h', '.cu', '.cuh')
PLAIN_LAYERS = ('common', 'rma', 'gpu', 'netmod/verbs', 'adapt')   # relative to src/
# The layers under src/ (relative to it) and their heights: a file may include a header of
# its own layer or of a lower one, never of a layer as high or higher.  A file belongs to
# the longest of these directories that holds it (src/netmod/verbs/x.c is netmod/verbs'),
# and a file in none of them is in no layer.
LAYER_RANKS = (
    ('common', -1),                     # what every layer shares: the status codes
    ('gpu', 0), ('netmod/verbs', 0),    # the GPU layer and the verbs channel
    ('rma', 1),                         # the RMA engine: defines the seams
    ('adapt', 2),                       # src/rma's seams over src/gpu and src/netmod/verbs
    ('netmod', 3),                      # the MPICH-facing glue: wires them together
)
INCLUDE_DIRS = ('', 'netmod')                   # the build's -Isrc -Isrc/netmod
PUBLIC_DIR = 'include'                          # beside src/: the build's -Iinclude, first
NETMOD_DIR = 'netmod'

# Headers of MPICH (and of its CH4 netmod interface) a plain layer must not include.
MPICH_HEADER_PATTERNS = (
    'mpiimpl.h', 'mpidimpl.h', 'mpl.h', 'mpl_*.h', 'mpir_*.h', 'mpidig*.h', 'mpidu_*.h',
    'mpidpre.h', 'mpidch4*.h', 'ch4_*.h', 'netmod_*.h',
    # the netmod's own glue, also when the tree does not (yet) hold the file
    'gdr_impl.h', 'gdr_internal.h', 'gdr_cvars.h', 'gdr_pre.h', 'gdr_noinline.h',
)
MPICH_IDENTIFIER = re.compile(r'\b(?:MPIR|MPIDI|MPIDIG|MPIDU|MPL|MPID)_[A-Za-z0-9_]*')
MAX_DETAILS = 20

# C library functions the memory hooks replace: a call to free() is no dependency on
# the file that hooks it.
LIBC_INTERPOSED = frozenset('''
    malloc calloc realloc free posix_memalign memalign aligned_alloc valloc pvalloc
    mmap mmap64 munmap mremap madvise brk sbrk shmat shmdt
'''.split())

# Words that precede a parenthesis without naming a function being defined.
NOT_FUNCTION_NAMES = frozenset('''
    __attribute__ __attribute __declspec __asm__ __asm asm _Alignas alignas _Static_assert
    static_assert __typeof__ typeof _Atomic sizeof
    void char short int long float double signed unsigned _Bool bool const volatile
    restrict __restrict static inline __inline__ extern struct union enum
    if while for switch return do else
'''.split())


# ---- lexing -------------------------------------------------------------------------

_COMMENT_OR_LITERAL = re.compile(r'''
      (?P<comment> //(?:\\\n|[^\n])* | /\*.*?(?:\*/|\Z) )
    | (?P<literal> "(?:\\.|[^"\\\n])*"? | '(?:\\.|[^'\\\n])*'? )
''', re.X | re.S)

_TOKEN = re.compile(r'''
      (?P<ident>   [A-Za-z_]\w* )
    | (?P<number>  \.?\d(?:[eEpP][+-]|[\w.])* )
    | (?P<literal> "[^"\n]*" | '[^'\n]*' )
    | (?P<punct>   ->|==|!=|<=|>=|\S )
''', re.X)


def _blank(text):
    """Spaces for text, newlines kept so that line numbers stay right."""
    return re.sub(r'[^\n]', ' ', text)


def strip_comments(text, blank_literals):
    """text with comments blanked and, if asked, the inside of string/char literals."""
    def replace(m):
        if m.group('comment'):
            return _blank(m.group(0))
        if not blank_literals:
            return m.group(0)
        quoted = m.group(0)
        return quoted[0] + _blank(quoted[1:-1]) + quoted[-1] if len(quoted) > 1 else quoted
    return _COMMENT_OR_LITERAL.sub(replace, text)


def tokenize(text, first_line=1):
    """[(text, kind, line)] of a comment-free text."""
    newlines = [m.start() for m in re.finditer('\n', text)]
    return [(m.group(0), m.lastgroup, first_line + bisect.bisect_left(newlines, m.start()))
            for m in _TOKEN.finditer(text)]


def split_directives(code):
    """(code with preprocessor lines blanked, [(line, directive text)]).

    Directives (with their continuation lines) leave the token stream so that braces
    in macro bodies do not upset the brace depth."""
    lines = code.split('\n')
    directives = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith('#'):
            first = i
            while lines[i].rstrip().endswith('\\') and i + 1 < len(lines):
                i += 1
            directives.append((first + 1, '\n'.join(l.rstrip().rstrip('\\')
                                                     for l in lines[first:i + 1])))
            for j in range(first, i + 1):
                lines[j] = ''
        i += 1
    return '\n'.join(lines), directives


# ---- one source file ----------------------------------------------------------------

class SourceFile:
    """What the checks need of one file: includes, definitions, references."""

    def __init__(self, path, src_dir):
        self.path = path
        self.name = os.path.relpath(path, os.path.dirname(src_dir))  # "src/..."
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            text = f.read()
        # includes: from text without comments, literals kept ("header.h" is one)
        self.includes = []      # [(line, quote char, header name)]
        for number, line in enumerate(strip_comments(text, False).split('\n'), 1):
            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
            if m:
                self.includes.append((number, m.group(1), m.group(2)))
        self.code = strip_comments(text, True)
        self.is_header = path.endswith(('.h', '.cuh'))
        self.definitions = {}   # function name -> (line, declared static)
        self.references = []    # [(identifier, line)] in code: bodies, initializers, macros
        self._scan()

    def _scan(self):
        code, directives = split_directives(self.code)
        tokens = tokenize(code)
        blocks = []             # kind of every open brace, outermost first
        pending = []            # tokens of the top-level declaration being read
        assigned = False        # pending holds '=': a top-level initializer
        previous = None
        for text, kind, line in tokens:
            depth = sum(1 for k in blocks if k != 'linkage')
            if text == '{':
                if depth == 0:
                    block, name = classify_block(pending)
                    if block == 'function':
                        if name:
                            static = any(t[0] == 'static' or 'STATIC' in t[0]
                                         for t in pending)  # MPL_STATIC_INLINE_PREFIX
                            self.definitions.setdefault(name[0], (name[1], static))
                        pending, assigned = [], False
                    elif block == 'linkage':
                        pending = []
                    blocks.append(block)
                else:
                    blocks.append('nested')
            elif text == '}':
                if blocks and blocks.pop() in ('function', 'linkage') and depth <= 1:
                    pending, assigned = [], False
            elif depth == 0:
                if text == ';':
                    pending, assigned = [], False
                else:
                    pending.append((text, kind, line))
                    assigned = assigned or text == '='
            counting = assigned if depth == 0 else \
                any(k in ('function', 'initializer') for k in blocks)
            if counting and kind == 'ident' and previous not in ('.', '->'):
                self.references.append((text, line))
            previous = text
        # a macro's body is code written in this file, whoever expands it
        for line, directive in directives:
            m = re.match(r'\s*#\s*define\s+\w+(\([^)]*\))?', directive)
            if m:
                body = directive[m.end():]
                body_line = line + directive[:m.end()].count('\n')
                previous = None
                for text, kind, tline in tokenize(body, body_line):
                    if kind == 'ident' and previous not in ('.', '->', '#', '##'):
                        self.references.append((text, tline))
                    previous = text


def _drop_trailing_attributes(tokens):
    """tokens without trailing __attribute__((...)) groups."""
    while tokens and tokens[-1][0] == ')':
        opening = _matching_open(tokens, len(tokens) - 1)
        if opening > 0 and tokens[opening - 1][0] in ('__attribute__', '__attribute',
                                                      '__declspec', '__asm__', 'asm'):
            tokens = tokens[:opening - 1]
        else:
            break
    return tokens


def _matching_open(tokens, close):
    level = 0
    for i in range(close, -1, -1):
        if tokens[i][0] == ')':
            level += 1
        elif tokens[i][0] == '(':
            level -= 1
            if level == 0:
                return i
    return -1


def classify_block(pending):
    """What a '{' at brace depth 0 opens, from the tokens before it:
    ('function', (name, line) or None), ('initializer', None), ('linkage', None)
    (extern "C", namespace: transparent) or ('type', None) (struct/union/enum body)."""
    texts = [t[0] for t in pending]
    if texts[:1] == ['namespace'] or (len(pending) == 2 and texts[0] == 'extern'
                                      and pending[1][1] == 'literal'):
        return 'linkage', None
    if '=' in texts:
        return 'initializer', None
    tokens = _drop_trailing_attributes(pending)
    if not tokens or tokens[-1][0] != ')':
        return 'type', None
    # The name is the identifier before a top-level parameter list.  With several
    # (a macro before the type, an attribute macro after the list) prefer the last
    # one that does not look like a MACRO.
    candidates = []
    level = 0
    for i, (text, kind, line) in enumerate(tokens):
        if text == '(':
            if level == 0 and i > 0 and tokens[i - 1][1] == 'ident' \
                    and tokens[i - 1][0] not in NOT_FUNCTION_NAMES:
                candidates.append((tokens[i - 1][0], tokens[i - 1][2]))
            level += 1
        elif text == ')':
            level -= 1
    if not candidates:
        return 'function', None
    lower = [c for c in candidates if re.search('[a-z]', c[0])]
    return 'function', (lower or candidates)[-1]


# ---- the tree -----------------------------------------------------------------------

class Tree:
    def __init__(self, src_dir):
        self.src = os.path.abspath(src_dir)
        self.public = os.path.join(os.path.dirname(self.src), PUBLIC_DIR)
        self.label = os.path.basename(self.src) + '/'
        if os.path.isdir(self.public):
            self.label += ' and ' + PUBLIC_DIR + '/'
        self.files = {}         # absolute path -> SourceFile
        for top in (self.src, self.public):
            for root, dirs, names in os.walk(top):
                dirs.sort()
                for name in sorted(names):
                    if name.endswith(SOURCE_SUFFIXES):
                        path = os.path.join(root, name)
                        self.files[path] = SourceFile(path, self.src)

    def resolve(self, including, quote, header):
        """The file under src/ or include/ an include names, as the build finds it (-I
        include -I src -I src/netmod); None if none."""
        dirs = [self.public] + [os.path.join(self.src, d) for d in INCLUDE_DIRS]
        if quote == '"':
            dirs.insert(0, os.path.dirname(including))
        for d in dirs:
            path = os.path.normpath(os.path.join(d, header))
            if path in self.files:
                return path
        return None

    def is_public(self, path):
        return path.startswith(self.public + os.sep)

    def resolve_installed(self, including, quote, header):
        """The file of include/ an include of a public header names as a user's build finds
        it, with include/ installed as $PREFIX/include and nothing else of gdr's."""
        dirs = [self.public]
        if quote == '"':
            dirs.insert(0, os.path.dirname(including))
        for d in dirs:
            path = os.path.normpath(os.path.join(d, header))
            if path in self.files and self.is_public(path):
                return path
        return None

    def in_dir(self, path, layer, directly=False):
        base = os.path.join(self.src, layer)
        if directly:
            return os.path.dirname(path) == base
        return path.startswith(base + os.sep)


def strongly_connected(graph):
    """Tarjan's components of {node: iterable of nodes}, as sorted lists."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    sys.setrecursionlimit(max(1000, 4 * len(graph) + 100))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


class Result:
    def __init__(self, check, ok, headline, details=()):
        self.check, self.ok, self.headline, self.details = check, ok, headline, list(details)

    def lines(self):
        yield ('PASS' if self.ok else 'FAIL') + ' layers: ' + self.headline
        for d in self.details:
            yield '  ' + d


def check_public_layer(tree):
    what = '%s/ (the public headers) includes nothing of %s, no MPICH-internal header ' \
        'or identifier, and resolves on its own' % (PUBLIC_DIR, tree.label.split()[0])
    public = [f for p, f in tree.files.items() if tree.is_public(p)]
    if not public:
        return []               # a tree without include/ (an older checkout)
    offences = []               # (file name, line, what)
    for f in public:
        for line, quote, header in f.includes:
            shown = '%s%s%s' % (quote, header, '"' if quote == '"' else '>')
            target = tree.resolve(f.path, quote, header)
            if target and not tree.is_public(target):
                offences.append((f.name, line, 'includes %s, which is %s' % (
                    shown, tree.files[target].name)))
            elif any(fnmatch.fnmatch(os.path.basename(header), p)
                     for p in MPICH_HEADER_PATTERNS):
                offences.append((f.name, line, 'includes %s' % shown))
            elif quote == '"' and not tree.resolve_installed(f.path, quote, header):
                offences.append((f.name, line, 'includes %s, which is no file of %s/' % (
                    shown, PUBLIC_DIR)))
        for number, text in enumerate(f.code.split('\n'), 1):
            names = sorted(set(MPICH_IDENTIFIER.findall(text)))
            if names:
                offences.append((f.name, number, ', '.join(names)))
    if not offences:
        return [Result('public', True, what)]
    offences.sort()
    details = ['%s:%d: %s' % o for o in offences[:MAX_DETAILS]]
    if len(offences) > MAX_DETAILS:
        details.append('... and %d more' % (len(offences) - MAX_DETAILS))
    return [Result('public', False, '%s: %d offending lines' % (what, len(offences)),
                   details)]


def check_plain_layers(tree):
    what = ', '.join(os.path.basename(tree.src) + '/' + l for l in PLAIN_LAYERS) + \
        ' use no MPICH header or identifier'
    plain = [f for p, f in tree.files.items()
             if any(tree.in_dir(p, layer) for layer in PLAIN_LAYERS)]
    if not plain:
        return [Result('plain', False, what + ': found no files there to check')]
    offences = []               # (file name, line, what)
    for f in plain:
        for line, quote, header in f.includes:
            target = tree.resolve(f.path, quote, header)
            if any(fnmatch.fnmatch(os.path.basename(header), p)
                   for p in MPICH_HEADER_PATTERNS) or \
                    (target and tree.in_dir(target, NETMOD_DIR, directly=True)):
                offences.append((f.name, line, 'includes %s%s%s' % (
                    quote, header, '"' if quote == '"' else '>')))
        # a CVAR's name in a string literal is fine: literals are blanked
        for number, text in enumerate(f.code.split('\n'), 1):
            names = sorted(set(MPICH_IDENTIFIER.findall(text)))
            if names:
                offences.append((f.name, number, ', '.join(names)))
    if not offences:
        return [Result('plain', True, what)]
    offences.sort()
    details = ['%s:%d: %s' % o for o in offences[:MAX_DETAILS]]
    if len(offences) > MAX_DETAILS:
        details.append('... and %d more' % (len(offences) - MAX_DETAILS))
    files = len({o[0] for o in offences})
    return [Result('plain', False, '%s: %d offending lines in %d file%s' % (
        what, len(offences), files, '' if files == 1 else 's'), details)]


def check_layer_order(tree):
    def layer_of(path):
        found = None
        for layer, rank in LAYER_RANKS:
            if tree.in_dir(path, layer) and (found is None or len(layer) > len(found[0])):
                found = (layer, rank)
        return found

    what = 'includes point down the layers (%s)' % ' < '.join(
        ', '.join('%s/%s' % (os.path.basename(tree.src), l) for l, r in LAYER_RANKS if r == rank)
        for rank in sorted({r for l, r in LAYER_RANKS}))
    offences = []               # (file name, line, what)
    for path, f in tree.files.items():
        mine = layer_of(path)
        if mine is None:
            continue
        for line, quote, header in f.includes:
            target = tree.resolve(path, quote, header)
            theirs = layer_of(target) if target else None
            # every layer below the netmod is plain: the plain check reports its includes
            # of the netmod's own files
            if theirs is None or theirs[0] == mine[0] or theirs[1] < mine[1] \
                    or theirs[0] == NETMOD_DIR:
                continue
            offences.append((f.name, line, 'includes %s%s%s, which is %s: %s may not include %s'
                             % (quote, header, '"' if quote == '"' else '>',
                                tree.files[target].name, mine[0], theirs[0])))
    if not offences:
        return [Result('order', True, what)]
    offences.sort()
    details = ['%s:%d: %s' % o for o in offences[:MAX_DETAILS]]
    if len(offences) > MAX_DETAILS:
        details.append('... and %d more' % (len(offences) - MAX_DETAILS))
    return [Result('order', False, '%s: %d offending includes' % (what, len(offences)), details)]


def cycle_results(tree, check, noun, edges, cycles, describe_edge):
    """One PASS when there is no cycle, else one FAIL per cycle listing its edges."""
    if not cycles:
        return [Result(check, True, 'no %s cycles among %d files under %s'
                       % (noun, len(tree.files), tree.label))]
    results = []
    for cycle in cycles:
        names = [tree.files[p].name for p in cycle]
        details = [describe_edge(a, b) for a in cycle for b in sorted(edges[a]) if b in cycle]
        results.append(Result(check, False, '%s cycle among %d files under %s: %s'
                              % (noun, len(cycle), tree.label, ', '.join(names)), details))
    return results


def check_include_cycles(tree):
    edges = {}                  # including path -> {included path: line}
    for path, f in tree.files.items():
        edges[path] = {}
        for line, quote, header in f.includes:
            target = tree.resolve(path, quote, header)
            if target:
                edges[path].setdefault(target, line)
    cycles = [c for c in strongly_connected(edges) if len(c) > 1 or c[0] in edges[c[0]]]
    return cycle_results(tree, 'includes', 'include', edges, cycles,
                         lambda a, b: '%s:%d includes %s' % (tree.files[a].name, edges[a][b],
                                                             tree.files[b].name))


def check_call_cycles(tree):
    # Functions other files can call: a static one in a .c file is its own business.
    defined_in = {}             # function name -> {paths defining it}
    for path, f in tree.files.items():
        for name, (line, static) in f.definitions.items():
            if (f.is_header or not static) and name not in LIBC_INTERPOSED:
                defined_in.setdefault(name, set()).add(path)
    # a name defined in several files tells nothing about which one a call reaches
    owner = {name: next(iter(paths)) for name, paths in defined_in.items() if len(paths) == 1}
    edges = {}                  # path -> {path of the callee's file: (function, line)}
    for path, f in tree.files.items():
        edges[path] = {}
        for name, line in f.references:
            callee_file = owner.get(name)
            # a file's own definition of the name (static or not) is the one it calls
            if callee_file and callee_file != path and name not in f.definitions:
                edges[path].setdefault(callee_file, (name, line))
    cycles = [c for c in strongly_connected(edges) if len(c) > 1]
    return cycle_results(tree, 'calls', 'call', edges, cycles,
                         lambda a, b: '%s -> %s (%s)' % (tree.files[a].name, tree.files[b].name,
                                                         edges[a][b][0]))


def run_checks(src_dir):
    tree = Tree(src_dir)
    return check_public_layer(tree) + check_plain_layers(tree) + check_layer_order(tree) \
        + check_include_cycles(tree) + check_call_cycles(tree)


# ---- self-test ----------------------------------------------------------------------

# A tree the checker must pass: it holds the constructs a naive scan gets wrong.
CLEAN_TREE = {
    'rma/plain.h': '#ifndef PLAIN_H\n#define PLAIN_H\n#include <stddef.h>\n'
                   'int plain_span(size_t n);\n#endif\n',
    'rma/plain.c': '#include "plain.h"\n#include "netmod/verbs/wire.h"\n'
                   '/* MPIR_Comment is no use of MPICH */\n'
                   'static const char *cvar = "MPIR_CVAR_CH4_GDR_DEVICE";\n'
                   'int plain_span(size_t n) { return wire_pad((int) n); }\n',
    'netmod/verbs/wire.h': 'static inline int wire_pad(int n)\n{\n    return (n + 7) & ~7;\n}\n',
    # an adapter: rma's seam over the layers below it, both reached
    'adapt/seam.h': '#include "rma/plain.h"\n#include "verbs/wire.h"\n#include "gpu/card.h"\n',
    'common/status.h': '#define STATUS_OK 0\n',
    'gpu/card.h': '#include <stdint.h>\n#include "pub.h"\n#include "common/status.h"\n',
    'netmod/impl.h': '#include <mpidimpl.h>\n#include "rma/plain.h"\n#include "adapt/seam.h"\n'
                     'MPL_STATIC_INLINE_PREFIX int MPIDI_NM_inline(int x)\n'
                     '{\n    return plain_span(x);\n}\n',
    # GNU style, a same-named static helper in each file (ambiguous: no edge),
    # member access and comments/strings naming the other file's function.
    'netmod/a.c': '#include "impl.h"\nstatic int\nhelper(void)\n{\n    return 1;\n}\n\n'
                  'int\na_entry(MPIR_Comm * c)\n{\n    return b_work(c) + helper();\n}\n',
    'netmod/b.c': '#include "impl.h"\nstatic int helper(void) { return 2; }\n'
                  'struct s { int (*a_entry)(void); };\n'
                  'int b_work(MPIR_Comm * c)\n{\n    struct s v = { 0 };\n'
                  '    /* a_entry() */ const char *why = "a_entry";\n'
                  '    return MPIDI_NM_inline(helper()) + (v.a_entry != 0);\n}\n',
    # free() calls the hook, but no file depends on the hook for it; a static post()
    # is hooks.c's own, not what the variable post in cache.c names.
    'netmod/verbs/hooks.c': 'void cache_drop(void);\nstatic int post(void) { return 0; }\n'
                            'void free(void *p)\n{\n    cache_drop();\n    post();\n}\n',
    'netmod/verbs/cache.c': '#include <stdlib.h>\nvoid cache_drop(void)\n{\n'
                            '    int post = 0;\n    free(&post);\n}\n',
    # the public headers (beside src/): each other, mpi.h and the C library; src/ may
    # include them; an MPICH name in a comment is no use of MPICH
    '../include/pub.h': '#include <mpi.h>\n#include <stdint.h>\n#include "pub/step.h"\n'
                        '/* MPIR_Comment */\nstatic inline int pub_put(int n) '
                        '{ return pub_step(n); }\n',
    '../include/pub/step.h': '#include "../pub/kind.h"\n'
                             'static inline int pub_step(int n) { return n + PUB_KIND; }\n',
    '../include/pub/kind.h': '#define PUB_KIND 1\n',
    'rma/uses_pub.c': '#include "pub.h"\nint uses_pub(void)\n{\n    return pub_put(1);\n}\n',
}

SELF_TESTS = (
    ('plain-layer MPICH use', 'plain', {
        'rma/bad.c': '#include "mpiimpl.h"\n#include "../netmod/impl.h"\n'
                     'int bad(void)\n{\n    return MPIR_Foo();\n}\n',
    }, ('src/rma/bad.c:1: includes "mpiimpl.h"', 'src/rma/bad.c:2: includes "../netmod/impl.h"',
        'src/rma/bad.c:5: MPIR_Foo')),
    ('includes pointing up', 'order', {
        'gpu/up.c': '#include "rma/plain.h"\n#include "card.h"\n',
        'netmod/verbs/up.h': '#include "../../adapt/seam.h"\n#include "gpu/card.h"\n',
        'rma/up.c': '#include "adapt/seam.h"\n',
        'common/up.h': '#include "../gpu/card.h"\n',
    }, ('src/common/up.h:1: includes "../gpu/card.h", which is src/gpu/card.h: common may '
        'not include gpu',
        'src/gpu/up.c:1: includes "rma/plain.h", which is src/rma/plain.h: gpu may not '
        'include rma',
        'src/netmod/verbs/up.h:1: includes "../../adapt/seam.h", which is src/adapt/seam.h: '
        'netmod/verbs may not include adapt',
        'src/netmod/verbs/up.h:2: includes "gpu/card.h", which is src/gpu/card.h: '
        'netmod/verbs may not include gpu',
        'src/rma/up.c:1: includes "adapt/seam.h", which is src/adapt/seam.h: rma may not '
        'include adapt')),
    ('call cycle', 'calls', {
        'netmod/c.c': 'int c_one(int n)\n{\n    return n ? d_two(n - 1) : 0;\n}\n',
        'netmod/d.c': 'int d_two(int n)\n{\n    return c_one(n);\n}\n',
        # a macro's body belongs to its header; extern "C" hides no definition
        'netmod/m.h': '#ifdef __cplusplus\nextern "C" {\n#endif\n#define M_CALL(x) \\\n'
                      '    e_fn(x)\nstatic inline int m_inline(int x) { return x; }\n'
                      '#ifdef __cplusplus\n}\n#endif\n',
        'netmod/e.c': '#include "m.h"\nint e_fn(int x)\n{\n    return m_inline(x);\n}\n',
    }, ('src/netmod/c.c -> src/netmod/d.c (d_two)', 'src/netmod/d.c -> src/netmod/c.c (c_one)',
        'src/netmod/m.h -> src/netmod/e.c (e_fn)', 'src/netmod/e.c -> src/netmod/m.h (m_inline)')),
    ('public header using src/', 'public', {
        '../include/bad.h': '#include "rma/plain.h"\n#include "mpiimpl.h"\n'
                            '#include "gone.h"\n#include "pub.h"\n'
                            'static inline int bad(void) { return MPIR_Foo(); }\n',
    }, ('include/bad.h:1: includes "rma/plain.h", which is src/rma/plain.h',
        'include/bad.h:2: includes "mpiimpl.h"',
        'include/bad.h:3: includes "gone.h", which is no file of include/',
        'include/bad.h:5: MPIR_Foo')),
    ('include cycle', 'includes', {
        'netmod/x.h': '#include "y.h"\n',
        'netmod/y.h': '#include "x.h"\n',
    }, ('src/netmod/x.h:1 includes src/netmod/y.h', 'src/netmod/y.h:1 includes src/netmod/x.h')),
    ('clean', None, {}, ()),
)


def self_test(tmp_dir):
    problems = []
    for number, (label, failing, extra, expected) in enumerate(SELF_TESTS):
        src = os.path.join(tmp_dir, 'tree%d' % number, 'src')
        for name, text in list(CLEAN_TREE.items()) + list(extra.items()):
            path = os.path.normpath(os.path.join(src, name))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
        results = run_checks(src)
        details = [d for r in results if not r.ok for d in r.details]
        for r in results:
            if r.ok != (r.check != failing):
                problems.append('%s: the %s check should %s: %s' % (
                    label, r.check, 'fail' if r.ok else 'pass',
                    '; '.join([r.headline] + r.details)))
        for want in expected:
            if want not in details:
                problems.append('%s: missing "%s" in %s' % (label, want, details))
        if failing in ('plain', 'public', 'order') and len(details) != len(expected):
            problems.append('%s: expected exactly %s, got %s' % (label, expected, details))
    if problems:
        return [Result('selftest', False, 'self-test: ' + p) for p in problems]
    return [Result('selftest', True, 'self-test (%s)' % ', '.join(
        '%s %s' % (t[0], 'fails' if t[1] else 'passes') for t in SELF_TESTS))]


def main(argv):
    if len(argv) == 3 and argv[1] == '--self-test':
        results = self_test(argv[2])
    elif len(argv) == 2 and not argv[1].startswith('-'):
        if not os.path.isdir(argv[1]):
            print('check-layers: no directory %s' % argv[1], file=sys.stderr)
            return 2
        results = run_checks(argv[1])
    else:
        print('usage: layers.py SRC_DIR | --self-test TMPDIR', file=sys.stderr)
        return 2
    for r in results:
        for line in r.lines():
            print(line)
    return 0 if all(r.ok for r in results) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
