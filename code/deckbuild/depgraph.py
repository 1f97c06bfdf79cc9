"""Which cells a cell depends on, from a static reading of their code (``ast``).

A cell depends on an earlier cell when both name the same module-level variable, whether
they read it or write it: a method call or an item assignment can change an object in
place (``model.eval()``, ``d[k] = v``), so a shared name is enough. Names bound only by
top-level ``import`` statements (``torch``, ``np``, ``tt``) do not link cells; the cell's
cache key records which import statements bound the ones it uses instead.

Some cells are *barriers*: every later cell depends on them. A cell that changes
process-wide state (``os.environ``, ``sys.path``, rcParams, ``torch.set_num_threads``,
warning filters, ``<module>.set_*`` calls...) is one; a cell the analysis cannot see
through (``global``, ``exec``/``eval``, ``import *``, IPython magics and shell lines, the
``_``/``Out`` history, a syntax error) is *opaque*: a barrier that also depends on every
earlier cell. When unsure, the analysis links cells rather than not.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

OPAQUE_CALLS = {"exec", "eval", "globals", "locals", "vars", "get_ipython", "__import__"}
HISTORY = re.compile(r"^(_{1,3}|_i{1,3}|_\d+|_i\d+|In|Out|_oh|_ih|_dh)$")
# attribute names that reach process-wide state, wherever they appear in a dotted name
GLOBAL_ATTRS = {"environ", "putenv", "chdir", "rcParams", "rcdefaults", "rc", "style",
                "setrecursionlimit", "use_deterministic_algorithms", "filterwarnings",
                "simplefilter", "resetwarnings", "set_printoptions", "set_num_threads",
                "set_num_interop_threads", "set_default_dtype", "set_default_device",
                "set_grad_enabled", "set_matplotlib_formats"}
GLOBAL_DOTTED = {"sys.path", "sys.modules", "warnings"}
SETTER = re.compile(r"^(set_\w+|use_\w+|use)$")


@dataclass
class CellNames:
    """What one cell's code does with module-level names."""

    reads: set = field(default_factory=set)
    writes: set = field(default_factory=set)
    imports: dict = field(default_factory=dict)    # name -> the import statement binding it
    calls: set = field(default_factory=set)        # dotted names called or assigned into
    inner: set = field(default_factory=set)        # names read inside functions and classes
    exposed: set = field(default_factory=set)      # names whose incoming value it may use
    kills: set = field(default_factory=set)        # names it rebinds before any use
    barrier: str = ""                              # why later cells depend on this one
    opaque: bool = False                           # also depends on every earlier cell


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call):
        return _dotted(node.func) + "()." + ".".join(reversed(parts)) if parts else _dotted(node.func)
    if isinstance(node, ast.Subscript):
        return _dotted(node.value)
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _bound_in(nodes) -> set:
    """Names a function, class or comprehension body binds (its local names)."""
    out = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                out.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(sub.name)
            elif isinstance(sub, ast.arg):
                out.add(sub.arg)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in sub.names)
            elif isinstance(sub, ast.ExceptHandler) and sub.name:
                out.add(sub.name)
    return out


class _Scan(ast.NodeVisitor):
    """Module-level reads and writes; inner scopes contribute their free names as reads."""

    def __init__(self, names: CellNames, top_imports: set):
        self.n = names
        self.top = top_imports      # ids of top-level import statements

    def _flag(self, why: str, opaque: bool = False) -> None:
        if not self.n.barrier or (opaque and not self.n.opaque):
            self.n.barrier = why
        self.n.opaque = self.n.opaque or opaque

    def _inner(self, body: list, bound: set) -> None:
        """A nested scope: names it loads but does not bind are read from the module."""
        local = bound | _bound_in(body)
        for node in body:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) \
                        and sub.id not in local:
                    self._load(sub.id)
                    self.n.inner.add(sub.id)
                elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                    self._flag(f"`{type(sub).__name__.lower()}` statement", opaque=True)
                elif isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                    local.discard(sub.target.id)
                elif isinstance(sub, ast.Call):
                    self._call(sub)

    def _load(self, name: str) -> None:
        if HISTORY.match(name):
            self._flag(f"reads the output history `{name}`", opaque=True)
        self.n.reads.add(name)

    def _call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name in OPAQUE_CALLS:
            self._flag(f"calls `{name}`", opaque=True)
        self.n.calls.add(name)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self._load(node.id)
        else:
            self.n.writes.add(node.id)

    def visit_Call(self, node):
        self._call(node)
        self.generic_visit(node)

    def visit_MatchAs(self, node):        # case [a, *rest] / case {"k": v, **rest}: binds
        if node.name:
            self.n.writes.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node):
        if node.rest:
            self.n.writes.add(node.rest)
        self.generic_visit(node)

    def visit_Global(self, node):
        self._flag("`global` statement", opaque=True)

    def _def(self, node, args=None):
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        if args is not None:
            for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
                self.visit(d)
            params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            body = node.body if isinstance(node.body, list) else [node.body]
            self._inner(body, params)
        if not isinstance(node, ast.Lambda):
            self.n.writes.add(node.name)

    def visit_FunctionDef(self, node):
        for a in ast.walk(node.args):
            if isinstance(a, ast.arg) and a.annotation is not None:
                self.visit(a.annotation)
        if node.returns is not None:
            self.visit(node.returns)
        self._def(node, node.args)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._def(node, node.args)

    def visit_ClassDef(self, node):
        for b in node.bases + [k.value for k in node.keywords]:
            self.visit(b)
        self._inner(node.body, set())
        self._def(node)

    def _comprehension(self, node, parts: list) -> None:
        gens = node.generators
        self.visit(gens[0].iter)            # evaluated in the enclosing scope
        targets = set()
        for g in gens:
            targets |= {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        inner = [g.target for g in gens] + [g.iter for g in gens[1:]]
        inner += [c for g in gens for c in g.ifs] + parts
        for sub in (s for n in inner for s in ast.walk(n)):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self.n.writes.add(sub.target.id)   # a walrus binds in the enclosing scope
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) \
                    and sub.id not in targets:
                self._load(sub.id)
            elif isinstance(sub, ast.Call):
                self._call(sub)
            elif isinstance(sub, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                  ast.GeneratorExp)):
                pass   # their names were already collected (conservatively) by the walk

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    def visit_Import(self, node):
        if id(node) not in self.top:      # a nested import binds like an assignment
            for alias in node.names:
                self.n.writes.add((alias.asname or alias.name).split(".")[0])

    def visit_ImportFrom(self, node):
        for alias in node.names:
            if alias.name == "*":
                self._flag("`import *`", opaque=True)
            elif id(node) not in self.top:
                self.n.writes.add(alias.asname or alias.name)


def _global_state(names: CellNames, tree: ast.Module) -> str:
    """Why this cell changes process-wide state, or ''."""
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for t in targets:
            if isinstance(t, (ast.Attribute, ast.Subscript)):
                names.calls.add(_dotted(t) + "=")
    for name in sorted(names.calls):
        parts = name.rstrip("=").replace("().", ".").split(".")
        if GLOBAL_ATTRS & set(parts) or any(name == d or name.startswith(d + ".")
                                           for d in GLOBAL_DOTTED):
            return f"changes process-wide state (`{name.rstrip('=')}`)"
    return ""


def _kills(stmt) -> set:
    """Names a top-level statement binds unconditionally, without reading them first."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {a.asname or a.name for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.With, ast.AsyncWith)):   # its body runs once, unconditionally
        return set().union(*(_kills(s) for s in stmt.body))
    targets = stmt.targets if isinstance(stmt, ast.Assign) else (
        [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else [])
    out = set()
    for t in targets:
        for node in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", [])):
            node = node.value if isinstance(node, ast.Starred) else node
            if isinstance(node, ast.Name):
                out.add(node.id)
    return out


def _bound_first(stmt) -> set:
    """Names a ``for`` or ``with`` statement binds before its body reads them: the body
    sees the new value, so they are not read from earlier cells (unless the loop's
    iterable or the context expression reads them, or a ``for`` has an ``else``)."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and not stmt.orelse:
        targets, heads = [stmt.target], [stmt.iter]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [w.optional_vars for w in stmt.items if w.optional_vars is not None]
        heads = [w.context_expr for w in stmt.items]
    else:
        return set()
    bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound - {n.id for h in heads for n in ast.walk(h) if isinstance(n, ast.Name)}


def _scan_statements(names: CellNames, tree: ast.Module, top: set) -> None:
    """Reads and writes, statement by statement: a name is *exposed* (the cell may use or
    change the value earlier cells left) unless a plain assignment rebound it first."""
    for stmt in tree.body:
        part = CellNames()
        _Scan(part, top).visit(stmt)
        kills = _kills(stmt)
        names.exposed |= (part.reads | (part.writes - kills)) - names.kills - _bound_first(stmt)
        names.kills |= kills - names.exposed
        for attr in ("reads", "writes", "calls", "inner"):
            getattr(names, attr).update(getattr(part, attr))
        if part.barrier and (not names.barrier or (part.opaque and not names.opaque)):
            names.barrier = part.barrier
        names.opaque = names.opaque or part.opaque


def analyze(code: str) -> CellNames:
    """The module-level names ``code`` reads and writes, and whether it is a barrier."""
    names = CellNames()
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:   # IPython's magics (%, %%) and shell lines (!) land here too
        names.barrier, names.opaque = f"not plain Python: IPython magic, shell line or " \
            f"syntax error ({exc.msg}, line {exc.lineno})", True
        return names
    top = {id(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))}
    _scan_statements(names, tree, top)
    for stmt in tree.body:      # top-level imports: the import-only candidates
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                bound = (alias.asname or alias.name).split(".")[0] if isinstance(
                    stmt, ast.Import) else (alias.asname or alias.name)
                names.imports[bound] = ast.unparse(stmt)
    why = _global_state(names, tree)
    if why and not names.barrier:
        names.barrier = why
    return names


@dataclass
class Graph:
    """The document's cells as a dependency graph (indices are 0-based cell numbers)."""

    names: list
    deps: list          # direct dependencies: earlier cells, per cell
    ancestors: list     # transitive closure of deps
    imports: list       # import statements binding the import-only names a cell reads


def _setter_barrier(n: CellNames, imported: set) -> str:
    """``tt.set_cache_directory(...)``, ``tl.X = 1``: a module's own state changed."""
    for name in sorted(n.calls):
        parts = name.rstrip("=").replace("().", ".").split(".")
        if parts[0] in imported and len(parts) > 1 and (
                name.endswith("=") or SETTER.match(parts[-1])):
            return f"changes module state (`{name.rstrip('=')}`)"
    return ""


def _link_names(names: list, data: set) -> list:
    """Each cell's names, with what the functions and objects it uses read when called
    (late binding: ``f()`` reads the globals f's body names, now)."""
    captured: dict = {}
    out = []
    for n in names:
        used = set(n.exposed)       # values from earlier cells, and what they reach
        todo = list(used)
        while todo:
            for extra in captured.get(todo.pop(), ()):
                if extra not in used:
                    used.add(extra)
                    todo.append(extra)
        carried = n.inner | (used - n.exposed)
        for w in n.writes:
            captured.setdefault(w, set()).update(carried)
        out.append(used & data)
    return out


def build_graph(codes: list, setup: set = frozenset()) -> Graph:
    """The graph of ``codes`` (cells in document order); ``setup`` cells are barriers."""
    names = [analyze(c) for c in codes]
    data = set().union(*(n.writes for n in names)) if names else set()
    imported = set().union(*(n.imports.keys() for n in names)) - data if names else set()
    for i, n in enumerate(names):
        if not n.barrier:
            n.barrier = "setup cell" if i in setup else _setter_barrier(n, imported)
    links = _link_names(names, data)
    deps, ancestors, imports = [], [], []
    for i, n in enumerate(names):
        d = set(range(i)) if n.opaque else {j for j in range(i) if names[j].barrier}
        for name in links[i]:
            for j in range(i - 1, -1, -1):
                if name in names[j].reads or name in names[j].writes:
                    d.add(j)
                if name in names[j].kills:
                    break
        deps.append(d)
        ancestors.append(set(d).union(*(ancestors[j] for j in d)) if d else set())
        need = []
        for name in sorted((n.reads | names[i].inner) & imported - set(n.imports)):
            binder = next((names[j].imports[name] for j in range(i - 1, -1, -1)
                           if name in names[j].imports), None)
            if binder is not None and binder not in need:
                need.append(binder)
        imports.append(need)
    return Graph(names, deps, ancestors, imports)
