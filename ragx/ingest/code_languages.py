"""Which tree-sitter grammar reads which code file, and what a definition is in each language.

One row per language: the grammar's PyPI module and the function that hands out its language, a
tree-sitter query whose matches are the definitions (`@def` the node, `@name` its name, `@recv` a Go
method's receiver type), the wrappers whose span a definition takes (decorators, `export`, templates)
and the line prefixes of the comments that belong to the definition below them.
"""

from __future__ import annotations

from dataclasses import dataclass


def _named(*node_types: str) -> str:
    """Query lines matching each node type by its `name` field: the common shape of a definition."""
    return "".join(f"({t} name: (_) @name) @def\n" for t in node_types)


_C_DEFS = """
(function_definition declarator: (function_declarator declarator: (_) @name)) @def
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @def
(struct_specifier name: (_) @name body: (_)) @def
(union_specifier name: (_) @name body: (_)) @def
(enum_specifier name: (_) @name body: (_)) @def
(type_definition declarator: (type_identifier) @name) @def
"""

_JS_DEFS = _named("function_declaration", "generator_function_declaration", "class_declaration", "method_definition") + """
(lexical_declaration (variable_declarator name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function) (class)] @value)) @def
(variable_declaration (variable_declarator name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function) (class)] @value)) @def
"""

_TS_DEFS = _JS_DEFS + _named("abstract_class_declaration", "interface_declaration", "enum_declaration", "type_alias_declaration",
                              "internal_module", "function_signature")

_SLASH_COMMENTS = ("//", "/*", "*")


@dataclass(frozen=True)
class Grammar:
    module: str                      # the PyPI wheel's module (compiled grammar inside: nothing downloads)
    function: str                    # its function returning the language pointer
    definitions: str                 # the tree-sitter query of definitions
    wrappers: tuple[str, ...] = ()   # parent node types whose span is the definition's (decorators, export)
    comments: tuple[str, ...] = _SLASH_COMMENTS  # line prefixes of comments (and attributes) kept with a definition


GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        "tree_sitter_python", "language",
        _named("function_definition", "class_definition"), wrappers=("decorated_definition",), comments=("#",)),
    "javascript": Grammar("tree_sitter_javascript", "language", _JS_DEFS, wrappers=("export_statement",)),
    "typescript": Grammar("tree_sitter_typescript", "language_typescript", _TS_DEFS, wrappers=("export_statement",)),
    "tsx": Grammar("tree_sitter_typescript", "language_tsx", _TS_DEFS, wrappers=("export_statement",)),
    "go": Grammar(
        "tree_sitter_go", "language",
        """
        (function_declaration name: (_) @name) @def
        (method_declaration receiver: (parameter_list (parameter_declaration
            type: [(type_identifier) @recv (pointer_type (type_identifier) @recv)
                   (generic_type (type_identifier) @recv) (pointer_type (generic_type (type_identifier) @recv))]))
            name: (_) @name) @def
        (type_declaration (type_spec name: (_) @name)) @def
        """),
    "rust": Grammar(
        "tree_sitter_rust", "language",
        _named("function_item", "function_signature_item", "struct_item", "enum_item", "union_item", "trait_item")
        + "(impl_item type: (_) @name) @def\n(mod_item name: (_) @name body: (_)) @def\n" + _named("macro_definition"),
        comments=("//", "/*", "*", "#[")),
    "java": Grammar(
        "tree_sitter_java", "language",
        _named("class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
               "annotation_type_declaration", "method_declaration", "constructor_declaration"),
        comments=("//", "/*", "*", "@")),
    "c": Grammar("tree_sitter_c", "language", _C_DEFS),
    "cpp": Grammar(
        "tree_sitter_cpp", "language",
        _C_DEFS + """
        (function_definition declarator: (reference_declarator (function_declarator declarator: (_) @name))) @def
        (class_specifier name: (_) @name body: (_)) @def
        (namespace_definition name: (_) @name body: (_)) @def
        """,
        wrappers=("template_declaration",)),
}

# File extension (lower case, no dot) -> language. `.h` is read as C++: the C++ grammar reads C headers too.
EXTENSIONS: dict[str, str] = {
    "py": "python", "pyi": "python", "pyw": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "tsx",
    "go": "go", "rs": "rust", "java": "java",
    "c": "c",
    "h": "cpp", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp", "hh": "cpp", "hpp": "cpp", "hxx": "cpp",
}


def language_of(path: str) -> str | None:
    """The language whose grammar reads `path`, by its extension; None: today's chunker cuts it."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return None
    return EXTENSIONS.get(name.rsplit(".", 1)[-1].lower())
