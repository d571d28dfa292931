"""The data-file reader's second phase: each declaration's resource type and its values, read from
the syntax tree (a literal, a reference, or `secret("NAME")`; anything else is a problem)."""
from __future__ import annotations

import ast
from typing import Any

from connectors.resources import ResourceType, Secret
from runs.config.datafiles.state import (
    _BAD,
    RUNTIME_FUNCTIONS,
    RUNTIME_MODULE,
    WHAT_A_FILE_HOLDS,
    _Decl,
    _Name,
    _ReaderState,
)
from runs.declarations import BUILTIN_TYPES


class _Values(_ReaderState):
    def evaluate(self, decl: _Decl) -> None:
        file, value = decl.file, decl.stmt.value
        if not isinstance(value, ast.Call):
            if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.UnaryOp)):
                self.problem(file, value, f"{decl.name} is a constant, and {WHAT_A_FILE_HOLDS}: write the value "
                                          f"where it is used", decl)
            else:
                self.problem(file, value, f"{WHAT_A_FILE_HOLDS}: write {decl.name} = vendor.type(field=value, ...)",
                             decl)
            return
        decl.rt = self.type_of(decl, value.func)
        for arg in value.args:
            self.problem(file, arg, f"give each value by its field name: {self.spelled(value.func)}(field=value)",
                         decl)
        for keyword in value.keywords:
            if keyword.arg is None:
                self.problem(file, keyword, "`**values`: write each field out, field=value", decl)
                continue
            decl.raw[keyword.arg] = (keyword, self.value(decl, keyword.value))

    @staticmethod
    def spelled(func: ast.AST) -> str:
        try:
            return ast.unparse(func)
        except Exception:  # pragma: no cover - unparse takes any expression
            return "vendor.type"

    def type_of(self, decl: _Decl, func: ast.AST) -> ResourceType | None:
        file = decl.file
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            base = func.value.id
            binding = file.bindings.get(base)
            if binding is not None and binding.kind == "connector":
                rt = self.types.get(f"{binding.vendor}.{func.attr}")
                if rt is None:
                    known = sorted(k.split(".", 1)[1] for k in self.types if k.startswith(f"{binding.vendor}."))
                    self.problem(file, func, f"{binding.vendor} has no resource type {func.attr}; its types are "
                                             f"{', '.join(known) or 'none'}", decl)
                return rt
            if binding is not None and binding.kind == "runtime":
                return self.runtime_type(decl, func, func.attr)
            if binding is None:
                self.problem(file, func.value, f"{base} is not imported: import the connector, "
                                               f"e.g. from {self.package}.vendors.{base} import {base}", decl)
            elif binding.kind == "refused":
                self.problem(file, func.value, f"{base} comes from an import that is refused "
                                               f"(line {getattr(binding.node, 'lineno', '?')})", decl)
            else:
                self.problem(file, func.value, f"{base} is not a connector: declare a resource as "
                                               f"name = vendor.type(...), the vendor imported from its module", decl)
            return None
        if isinstance(func, ast.Name):
            binding = decl.file.bindings.get(func.id)
            if binding is not None and binding.kind == "function":
                return self.runtime_type(decl, func, binding.function)
        if isinstance(func, ast.Attribute):
            self.problem(file, func, f"`{self.spelled(func)}`: a resource is declared as vendor.type(...), one "
                                     f"dot: import the connector, from <module> import <vendor>", decl)
        else:
            self.problem(file, func, f"`{self.spelled(func)}(...)` is a call, and a data file is read, not run: "
                                     f"{WHAT_A_FILE_HOLDS}, sanoma.person(...) or sanoma.group(...)", decl)
        return None

    def runtime_type(self, decl: _Decl, node: ast.AST, function: str) -> ResourceType | None:
        if function in ("person", "group", "local"):
            return BUILTIN_TYPES[f"sanoma.{function}"]
        if function == "secret":
            self.problem(decl.file, node, "secret(...) is a value, not a resource: give it to a write-only field, "
                                          "e.g. signing_secret=secret(\"NAME\")", decl)
        else:
            self.problem(decl.file, node, f"sanoma has no {function}: it offers {', '.join(RUNTIME_FUNCTIONS)}", decl)
        return None

    def value(self, decl: _Decl, node: ast.AST) -> Any:
        file = decl.file
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, (str, bool, int, float)):
                return node.value
            self.problem(file, node, f"{node.value!r} is not a data file value: write text, a number, "
                                     f"True/False/None, a list or a dict", decl)
            return _BAD
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
            number = node.operand.value
            assert isinstance(number, (int, float))
            return -number if isinstance(node.op, ast.USub) else number
        if isinstance(node, (ast.List, ast.Tuple)):
            items = []
            for item in node.elts:
                if isinstance(item, ast.Starred):
                    self.problem(file, item, "`*items` is computed when the file runs: write the items out", decl)
                    return _BAD
                items.append(self.value(decl, item))
            return items
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    self.problem(file, item, "`**mapping` is computed when the file runs: write the keys out", decl)
                    return _BAD
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    self.problem(file, key, "a dict's keys are written as text in quotes", decl)
                    return _BAD
                out[key.value] = self.value(decl, item)
            return out
        if isinstance(node, ast.Name):
            name = _Name(node.id, node)
            decl.names.append(name)
            return name
        if isinstance(node, ast.JoinedStr):
            if all(isinstance(part, ast.Constant) for part in node.values):
                return "".join(str(part.value) for part in node.values if isinstance(part, ast.Constant))
            self.problem(file, node, "an f-string with values is computed when the file runs: write the whole text "
                                     "as a plain string", decl)
            return _BAD
        if isinstance(node, ast.Call):
            return self.secret(decl, node)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            text = self.spelled(node)
            hint = ('; a value kept out of the repo is secret("NAME")' if "environ" in text or "getenv" in text
                    else "")
            self.problem(file, node, f"`{text}` is looked up when the file runs, and a data file is read, not run: "
                                     f"write the value itself{hint}", decl)
            return _BAD
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self.problem(file, node, "a comprehension is computed when the file runs: write the items out one by one",
                         decl)
            return _BAD
        if isinstance(node, ast.Set):
            self.problem(file, node, "a set: write a list, [a, b] (a field compares it unordered if declared so)",
                         decl)
            return _BAD
        self.problem(file, node, f"`{self.spelled(node)}` is computed when the file runs: write its value itself",
                     decl)
        return _BAD

    def secret(self, decl: _Decl, node: ast.Call) -> Any:
        file, func = decl.file, node.func
        is_secret = False
        if isinstance(func, ast.Name):
            binding = file.bindings.get(func.id)
            is_secret = binding is not None and binding.kind == "function" and binding.function == "secret"
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            binding = file.bindings.get(func.value.id)
            is_secret = binding is not None and binding.kind == "runtime" and func.attr == "secret"
        if not is_secret:
            self.problem(file, node, f"`{self.spelled(func)}(...)` is a call, and a data file is read, not run: "
                                     f"write the value itself (the only call a value may be is secret(\"NAME\"), "
                                     f"from {RUNTIME_MODULE})", decl)
            return _BAD
        if (len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Constant)
                or not isinstance(node.args[0].value, str)):
            self.problem(file, node, 'secret takes one name in quotes: secret("SHOP_WEBHOOK_SECRET")', decl)
            return _BAD
        name = node.args[0].value
        if not name or not name.replace("_", "").isalnum() or not name[0].isalpha() or name.upper() != name:
            self.problem(file, node.args[0], f"a secret's name is upper-case letters, digits and underscores, like an "
                                             f"environment variable: secret(\"{name.upper() or 'NAME'}\")", decl)
            return _BAD
        return Secret(name)
