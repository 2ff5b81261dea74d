"""The mutation operators of benchmarks/mutation.py: single edits of a module's source, found with `ast`.

Each operator plays one way a later change could break a trust check without a test noticing:

- `compare-invert`   a comparison turned around (`<` -> `>=`, `==` -> `!=`, `in` -> `not in`, `is` -> `is not`)
- `compare-boundary` off by one at a comparison's boundary (`<` <-> `<=`, `>` <-> `>=`)
- `drop-operand`     a condition dropped from an `and` / `or` (one mutant per operand)
- `negate`           a condition negated (`if x` -> `if not x`, `not x` -> `x`), a boolean constant flipped
- `constant`         a number moved: x10 and /10 (a threshold widened or narrowed), and +1 / -1 for integers
- `arith`            an arithmetic operator swapped (`+` <-> `-`, `*` <-> `/`, `//` -> `/`), `min` <-> `max`
- `return-healthy`   the function returns the neutral value its annotation allows before doing anything
                     (`False`/`True`, `None`, `[]`, `()`, `{}`, `0`): a check that finds nothing
- `skip-body`        a function returning None returns at once: a check that raises or records nothing

A mutant is one replacement of a byte range of the source (the rest of the file is untouched, so the
diff is one line or a few). Its key names the module, the enclosing function, the operator and the
code before and after, not the line number, so a key stays the same when unrelated lines move (the
key is what benchmarks/mutation_equivalent.txt argues about).

Not mutated: strings and f-strings (messages), annotations, docstrings, `__all__`, `if TYPE_CHECKING:`
blocks, code under `if __name__ == "__main__"`, `__repr__`/`__str__`, data tables (a module- or
class-level literal of five or more entries: device bandwidths, bytes per KV type, the gate's capitals;
figures with a source, not rules), and lines marked `# no mutate`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["OPERATORS", "Mutant", "Scope", "mutants_of"]

OPERATORS = ("compare-invert", "compare-boundary", "drop-operand", "negate", "constant", "arith",
             "return-healthy", "skip-body")

_INVERT: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                                                     ast.GtE: ast.Gt}
_ARITH: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div,
                                                        ast.Div: ast.Mult, ast.FloorDiv: ast.Div}
_SKIPPED_FUNCTIONS = {"__repr__", "__str__", "__rich__", "__init__", "__hash__"}
_MARK = "# no mutate"
_TABLE_MIN = 5


@dataclass(frozen=True)
class Scope:
    """Where a mutant sits: the qualified name of its function (or `<module>` / a class) and which
    lines decide the tests that cover it."""

    qualname: str
    function_lines: tuple[int, int] | None  # the enclosing function's first and last line
    names: tuple[str, ...] = ()  # a module- or class-level assignment: the names it binds


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to src/rigbench, e.g. "analysis/_goodput.py"
    line: int
    end_line: int
    operator: str
    original: str  # the source replaced (one line, whitespace collapsed)
    replacement: str
    scope: Scope
    start: int  # byte offsets into the module's UTF-8 source
    end: int
    new_text: str
    occurrence: int = 1  # the n-th mutant with the same scope, operator, original and replacement

    @property
    def key(self) -> str:
        nth = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"{self.path}:{self.scope.qualname}:{self.operator}: {self.original} -> {self.replacement}{nth}"

    def apply(self, source: bytes) -> bytes:
        return source[:self.start] + self.new_text.encode() + source[self.end:]


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _number(value: float) -> int | float:
    """A product or quotient without float noise (0.3 * 10 is 3.0, not 3.0000000000000004)."""
    return float(f"{value:.12g}") if isinstance(value, float) else value


def _neutral_values(returns: ast.expr | None) -> list[str]:
    """What a function with this return annotation can return without computing anything."""
    if returns is None:
        return []
    if isinstance(returns, ast.Constant) and returns.value is None:
        return []  # skip-body handles these
    if isinstance(returns, ast.BinOp) and isinstance(returns.op, ast.BitOr):
        parts = [returns.left, returns.right]
        if any(isinstance(p, ast.Constant) and p.value is None for p in parts):
            return ["None"]
        return []
    if isinstance(returns, ast.Name):
        return {"bool": ["False", "True"], "int": ["0"], "float": ["0.0"]}.get(returns.id, [])
    if isinstance(returns, ast.Subscript) and isinstance(returns.value, ast.Name | ast.Attribute):
        name = returns.value.id if isinstance(returns.value, ast.Name) else returns.value.attr
        if name == "Optional":
            return ["None"]
        if name in ("list", "Sequence", "Iterable", "Collection"):
            return ["[]"]
        if name in ("Iterator", "Generator", "AsyncIterator"):
            return []  # a generator: skip-body empties it
        if name == "tuple":
            elts = returns.slice.elts if isinstance(returns.slice, ast.Tuple) else [returns.slice]
            return ["()"] if len(elts) == 2 and isinstance(elts[1], ast.Constant) and elts[1].value is ... else []
        if name in ("dict", "Mapping"):
            return ["{}"]
        if name in ("set", "frozenset", "AbstractSet"):
            return ["set()"]
    return []


def _is_generator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does `fn` itself yield (not a function defined inside it)?"""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))
    return False


@dataclass
class _Collector:
    path: str
    source: bytes
    lines: list[bytes]
    offsets: list[int]
    found: list[Mutant] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    function: tuple[int, int] | None = None
    names: tuple[str, ...] = ()

    # -- positions -----------------------------------------------------------------------------
    def _span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def _marked(self, node: ast.AST) -> bool:
        first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return any(_MARK.encode() in self.lines[i - 1] for i in range(first, last + 1))

    def _scope(self) -> Scope:
        return Scope(".".join(self.stack) or "<module>", self.function, self.names)

    def add(self, node: ast.AST, operator: str, replacement: ast.AST | str, *, parens: bool = True) -> None:
        if self._marked(node):
            return
        start, end = self._span(node)
        original = self.source[start:end].decode()
        text = replacement if isinstance(replacement, str) else ast.unparse(replacement)
        new_text = f"({text})" if parens and not isinstance(replacement, str) else text
        if _one_line(original) == _one_line(text):
            return
        self.found.append(Mutant(self.path, node.lineno, node.end_lineno or node.lineno,  # type: ignore[attr-defined]
                                 operator, _one_line(original), _one_line(text), self._scope(), start, end,
                                 new_text))

    def insert_return(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, operator: str, value: str) -> None:
        body = fn.body
        first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
        if _is_docstring(first) or first.lineno == fn.lineno or self._marked(fn) or _is_stub(body):
            return
        where = self.offsets[first.lineno - 1]
        indent = self.lines[first.lineno - 1][:first.col_offset].decode()
        if indent.strip():  # the first statement shares its line with something else
            return
        stmt = f"return {value}".rstrip()
        self.found.append(Mutant(self.path, first.lineno, first.lineno, operator, f"def {fn.name}(...)",
                                 stmt, self._scope(), where, where, f"{indent}{stmt}\n"))


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_table(value: ast.expr) -> bool:
    """A module- or class-level literal of five or more entries: a table of data (device bandwidths, bytes
    per KV type, capitals), each figure with its source, not a rule."""
    if isinstance(value, ast.Dict):
        return len(value.keys) >= _TABLE_MIN
    return isinstance(value, ast.List | ast.Tuple | ast.Set) and len(value.elts) >= _TABLE_MIN


def _is_stub(body: list[ast.stmt]) -> bool:
    """A body with nothing to skip: `...` or `pass` (protocols, abstract methods)."""
    return all(isinstance(s, ast.Pass) or _is_docstring(s)
               or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is ...)
               for s in body)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__")


class _Visitor(ast.NodeVisitor):
    def __init__(self, c: _Collector) -> None:
        self.c = c

    # -- structure ----------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.c.stack.append(node.name)
        for d in node.decorator_list:
            self.visit(d)
        for stmt in node.body:
            self.visit(stmt)
        self.c.stack.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in _SKIPPED_FUNCTIONS:
            return
        outer, outer_fn = self.c.function, list(self.c.stack)
        self.c.stack.append(node.name)
        self.c.function = (node.lineno, node.end_lineno or node.lineno)
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self.visit(default)
        is_property = any(isinstance(d, ast.Name) and d.id in ("property", "cached_property")
                          for d in node.decorator_list)
        returns_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
        if _is_generator(node) or (returns_none and not is_property):
            self.c.insert_return(node, "skip-body", "")
        else:
            for value in _neutral_values(node.returns):
                self.c.insert_return(node, "return-healthy", value)
        for stmt in node.body:
            self.visit(stmt)
        self.c.stack[:] = outer_fn
        self.c.function = outer

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return
        self._binding([t for t in node.targets], node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._binding([node.target], node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._arith_op(node, node.op)
        self.visit(node.value)

    def _binding(self, targets: list[ast.expr], value: ast.expr) -> None:
        names = tuple(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        names += tuple(n.attr for t in targets for n in ast.walk(t) if isinstance(n, ast.Attribute))
        if self.c.function is None and _is_table(value):
            return
        outer = self.c.names
        if self.c.function is None:
            self.c.names = names
        self.visit(value)
        self.c.names = outer

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test) or _is_main_guard(node.test):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self._condition(node.test)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    def visit_While(self, node: ast.While) -> None:
        self._condition(node.test)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._condition(node.test)
        self.visit(node.body)
        self.visit(node.orelse)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        for cond in node.ifs:
            self._condition(cond)

    def _condition(self, test: ast.expr) -> None:
        """A test decides a branch: negate it when no other operator already turns it around."""
        if not isinstance(test, ast.Compare | ast.BoolOp | ast.UnaryOp | ast.Constant):
            self.c.add(test, "negate", ast.UnaryOp(ast.Not(), test))
        self.visit(test)

    # -- strings and annotations are not mutated ----------------------------------------------------
    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return

    def visit_arg(self, node: ast.arg) -> None:
        return

    def visit_Expr(self, node: ast.Expr) -> None:
        if not _is_docstring(node):
            self.visit(node.value)

    # -- the operators --------------------------------------------------------------------------
    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            for table, name in ((_INVERT, "compare-invert"), (_BOUNDARY, "compare-boundary")):
                new = table.get(type(op))
                if new is not None:
                    ops = list(node.ops)
                    ops[i] = new()
                    self.c.add(node, name, ast.Compare(node.left, ops, node.comparators))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        for i in range(len(node.values)):
            rest = node.values[:i] + node.values[i + 1:]
            self.c.add(node, "drop-operand", rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest))
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.c.add(node, "negate", node.operand)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if isinstance(v, bool):
            self.c.add(node, "negate", repr(not v), parens=False)
            return
        if not isinstance(v, int | float) or isinstance(v, complex) or (isinstance(v, float) and not math.isfinite(v)):
            return
        moved: list[int | float] = []
        if v != 0:
            moved += [_number(v * 10), _number(v / 10) if isinstance(v, float) else v // 10]
        if isinstance(v, int):
            moved += [v + 1, v - 1]
        seen: set[str] = set()
        for m in moved:
            text = repr(m)
            if m != v and text not in seen:
                seen.add(text)
                self.c.add(node, "constant", text, parens=False)

    def _arith_op(self, node: ast.BinOp | ast.AugAssign, op: ast.operator) -> None:
        new = _ARITH.get(type(op))
        if new is None:
            return
        if isinstance(node, ast.BinOp):
            if _is_string_format(node):
                return
            self.c.add(node, "arith", ast.BinOp(node.left, new(), node.right))
        else:
            self.c.add(node, "arith", ast.AugAssign(node.target, new(), node.value), parens=False)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._arith_op(node, node.op)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and node.args:
            other = "max" if node.func.id == "min" else "min"
            self.c.add(node.func, "arith", other, parens=False)
        self.generic_visit(node)


def _is_string_format(node: ast.BinOp) -> bool:
    """`"a" + b` or `"%s" % x`: building a message, not a figure."""
    return any((isinstance(side, ast.Constant) and isinstance(side.value, str)) or isinstance(side, ast.JoinedStr)
               for side in (node.left, node.right))


def mutants_of(path: str, source: bytes) -> list[Mutant]:
    """Every mutant of one module, in source order, each with its occurrence number set."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    c = _Collector(path, source, lines, offsets)
    _Visitor(c).visit(tree)
    ordered = sorted(c.found, key=lambda m: (m.start, m.end, m.operator, m.replacement))
    counts: dict[tuple[str, str, str, str], int] = {}
    out: list[Mutant] = []
    for m in ordered:
        k = (m.scope.qualname, m.operator, m.original, m.replacement)
        counts[k] = counts.get(k, 0) + 1
        out.append(_with_occurrence(m, counts[k]))
    return out


def _with_occurrence(m: Mutant, n: int) -> Mutant:
    return Mutant(m.path, m.line, m.end_line, m.operator, m.original, m.replacement, m.scope, m.start, m.end,
                  m.new_text, n)


def iter_operators() -> Iterator[str]:
    yield from OPERATORS
