"""Reading data files: the forms they may use, every refusal at file:line:column, what is left out."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from changes.datafiles.sanoma import GROUP, PERSON, group, person, secret
from company.vendors.shop import shop
from connectors import Ref, Secret, define_connector, define_resource
from runs.config.datafiles import read_datafiles

COMPANY = Path(__file__).resolve().parents[2] / "company"


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "acme"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        first = SHOP if text.startswith(SHOP) else ""
        path.write_text(first + textwrap.dedent(text[len(first):]).lstrip("\n"))
    return root


def read(tmp_path: Path, files: dict[str, str]):
    return read_datafiles(tree(tmp_path, files), [shop])


def problems(result) -> list[str]:
    return [str(p) for p in result.problems]


def names(result) -> list[str]:
    return [r.name for r in result.resources]


SHOP = "from company.vendors.shop import shop\n"


def test_the_example_company_reads_with_no_problems():
    result = read_datafiles(COMPANY, [shop])
    assert problems(result) == []
    by_id = result.by_id()
    assert by_id["resources/catalog.py#mug"].values == {"sku": "mug", "title": "Mug", "price_cents": 1500,
                                                        "tags": ["kitchen"]}
    assert by_id["resources/webhooks.py#orders_hook"].values["signing_secret"] == Secret("SHOP_WEBHOOK_SECRET")
    role = by_id["apps/support/resources/agents.py#alice_support"]
    assert role.type == "shop.staff_role"
    assert role.values["user"] == Ref(id="resources/staff.py#alice", type="sanoma.person", name="alice")
    assert role.references == ("resources/staff.py#alice",)
    people = {r.values["username"] for r in result.resources if r.type == "sanoma.person"}
    assert {"alice", "finance-lead", "sam", "support-lead"} <= people
    assert {r.values["name"] for r in result.resources if r.type == "sanoma.group"} >= {"security", "finance", "staff"}
    assert result.files[-1] == "apps/support/resources/agents.py"


def test_the_import_forms_and_references_across_files(tmp_path):
    result = read(tmp_path, {
        "resources/people.py": '''
            """People."""
            from changes.datafiles import sanoma

            ops = sanoma.group(name="ops")
            ada = sanoma.person(username="ada", email="ada@acme.example", name="Ada", groups=[ops, "staff"])
            """Ada runs the shop."""
        ''',
        "resources/more.py": '''
            from changes.datafiles.sanoma import group as grp, person, secret
            from company.vendors.shop import shop as store
            from acme.resources.people import ada as boss

            bea = person(username="bea", groups=[guests])
            guests = grp(name="guests")
            boss_admin = store.staff_role(user=boss, role="admin")
            hook = store.webhook(url="https://h.example.com/x", events=("order.paid",),
                                 signing_secret=secret("HOOK_KEY"))
            neg = store.product(sku="neg", title=f"Plain", price_cents=+5)
        ''',
        "apps/sales/resources/roles.py": '''
            from acme.resources.more import boss
            from company.vendors.shop import shop

            ada_support = shop.staff_role(user=boss, role="support")
        ''',
    })
    assert problems(result) == []
    assert [r.id for r in result.resources] == [
        "resources/more.py#bea", "resources/more.py#guests", "resources/more.py#boss_admin", "resources/more.py#hook",
        "resources/more.py#neg", "resources/people.py#ops", "resources/people.py#ada",
        "apps/sales/resources/roles.py#ada_support"]
    by_id = result.by_id()
    ada = by_id["resources/people.py#ada"]
    assert (ada.type, ada.line, ada.column) == ("sanoma.person", 5, 1)
    assert ada.values["groups"] == [Ref("resources/people.py#ops", "sanoma.group", "ops"), "staff"]
    assert by_id["resources/more.py#bea"].references == ("resources/more.py#guests",)  # declared below: fine
    assert by_id["resources/more.py#hook"].values == {"url": "https://h.example.com/x", "events": ["order.paid"],
                                                      "signing_secret": Secret("HOOK_KEY")}
    assert by_id["apps/sales/resources/roles.py#ada_support"].values["user"].id == "resources/people.py#ada"
    assert by_id["resources/more.py#neg"].values == {"sku": "neg", "title": "Plain", "price_cents": 5}
    plain = by_id["resources/more.py#boss_admin"].plain()
    assert plain["values"] == {"user": {"ref": "resources/people.py#ada"}, "role": "admin"}


def test_the_runtime_functions_give_what_the_reader_gives():
    assert secret("A_KEY") == Secret("A_KEY")
    with pytest.raises(ValueError, match="upper-case letters"):
        secret("a key")
    assert person(username="ada").type == PERSON.key == "sanoma.person"
    assert group(name="ops").type == GROUP.key == "sanoma.group"
    assert shop.product(sku="mug").type == "shop.product"


# Each: a file's text, the problem (file:line:column: message start).
REFUSALS = [
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1, colour="red")\n',
     "resources/x.py:2:66: mug: colour: shop.product has no field colour"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1, created_at="2026")\n',
     "resources/x.py:2:70: mug: created_at: is set by shop, never declared: leave it out"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=-3)\n',
     "resources/x.py:2:56: mug: price_cents: Input should be greater than 0"),
    ('mug = shop.product(sku="", title="Mug", price_cents=1)\n',
     "resources/x.py:2:24: mug: sku: is the identity of a shop.product and may not be empty"),
    ('mug = shop.product(title="Mug", price_cents=1)\n',
     "resources/x.py:2:7: mug: sku: missing: it is the identity of a shop.product, declare it"),
    ('cup = shop.product(sku="cup", title="Cup", price_cents=1)\n'
     'mug = shop.product(sku="mug", title=cup, price_cents=1)\n',
     "resources/x.py:3:37: mug: title: takes a value, not a reference to cup: write the value itself"),
    ('cup = shop.product(sku="cup", title="Cup", price_cents=1)\nrole = shop.staff_role(user=cup, role="admin")\n',
     "resources/x.py:3:29: role: user: refers to cup, a shop.product; user takes a reference to a sanoma.person"),
    ('from changes.datafiles.sanoma import secret\nmug = shop.product(sku="mug", title=secret("T"), price_cents=1)\n',
     "resources/x.py:3:37: mug: title: takes no secret"),
    ('mug = shop.product("mug", title="Mug", price_cents=1)\n',
     "resources/x.py:2:20: give each value by its field name: shop.product(field=value)"),
    ('mug = shop.product(**{"sku": "mug"})\n', "resources/x.py:2:20: `**values`: write each field out"),
    ('mug = shop.widget(sku="mug")\n',
     "resources/x.py:2:7: shop has no resource type widget; its types are product, staff_role, webhook"),
    ('mug = make(sku="mug")\n', "resources/x.py:2:7: `make(...)` is a call, and a data file is read, not run"),
    ('mug = shop.product(sku="mug", title=str(1), price_cents=1)\n',
     "resources/x.py:2:37: `str(...)` is a call, and a data file is read, not run: write the value itself"),
    ('n = "x"\nmug = shop.product(sku="mug", title=f"Mug {n}", price_cents=1)\n',
     "resources/x.py:2:5: n is a constant"),
    ('mug = shop.product(sku="mug", title=f"Mug {1}", price_cents=1)\n',
     "resources/x.py:2:37: an f-string with values is computed when the file runs: write the whole text"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1, tags=[t for t in "ab"])\n',
     "resources/x.py:2:64: a comprehension is computed when the file runs: write the items out"),
    ('import os\nmug = shop.product(sku="mug", title=os.environ["T"], price_cents=1)\n',
     "resources/x.py:3:37: `os.environ['T']` is looked up when the file runs"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1, tags={"a"})\n',
     "resources/x.py:2:64: a set: write a list"),
    ('mug = shop.product(sku="mug", title="M" + "ug", price_cents=1)\n',
     "resources/x.py:2:37: `'M' + 'ug'` is computed when the file runs: write its value itself"),
    ('from company.vendors.shop import *\n',
     "resources/x.py:2:1: `from company.vendors.shop import *`: import each name"),
    ('from os.path import join\n', "resources/x.py:2:21: `from os.path import join`: join is neither a connector"),
    ('from company.vendors.shop import Product\n',
     "resources/x.py:2:34: `from company.vendors.shop import Product`: Product is neither a connector"),
    ('from .other import mug\n', "resources/x.py:2:1: relative import: write the module in full"),
    ('import json\n', "resources/x.py:2:1: `import json`: a data file is read, not run"),
    ('for i in range(3):\n    pass\n',
     "resources/x.py:2:1: a `for` statement is code, and a data file is read, not run"),
    ('def f():\n    pass\n', "resources/x.py:2:1: a `def` statement is code"),
    ('mug: object = shop.product(sku="mug")\n', "resources/x.py:2:1: a data file holds imports and declarations"),
    ('a = b = shop.product(sku="mug")\n', "resources/x.py:2:1: a data file holds imports and declarations"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1)\n"stray"\nprint("hi")\n',
     "resources/x.py:4:1: `print('hi')` on its own line is code"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1)\n'
     'mug = shop.product(sku="mug2", title="M", price_cents=1)\n',
     "resources/x.py:3:1: mug is bound twice in this file (first at line 2)"),
    ('mug = shop.product(sku="mug", title=shop.title, price_cents=1)\n',
     "resources/x.py:2:37: `shop.title` is looked up when the file runs"),
    ('mug = shop.product(sku="mug", title=nobody, price_cents=1)\n',
     "resources/x.py:2:37: nobody is not declared: declare it in this file (nobody = vendor.type(...)) or import it "
     "(from acme.resources.<file> import nobody)"),
    ('mug = shop.product(sku="mug", title=shop, price_cents=1)\n',
     "resources/x.py:2:37: shop is a connector, not a resource"),
    ('mug = company.shop.product(sku="mug")\n', "resources/x.py:2:7: `company.shop.product`: a resource is declared"),
    ('mug = store.product(sku="mug")\n', "resources/x.py:2:7: store is not imported: import the connector"),
    ('from changes.datafiles.sanoma import secret\nk = secret("K")\n',
     "resources/x.py:3:5: secret(...) is a value, not a resource"),
    ('from changes.datafiles.sanoma import secret\n'
     'h = shop.webhook(url="https://a.example.com", events=["order.paid"], '
     'signing_secret=secret("low"))\n', "resources/x.py:3:92: a secret's name is upper-case letters"),
    ('from changes.datafiles.sanoma import secret\n'
     'h = shop.webhook(url="https://a.example.com", events=["order.paid"], '
     'signing_secret=secret(name="K"))\n', 'resources/x.py:3:85: secret takes one name in quotes'),
    ('from changes.datafiles.sanoma import nothing\n', "resources/x.py:2:38: changes.datafiles.sanoma has no nothing"),
    ('from acme.resources.missing import x\n', "resources/x.py:2:36: acme.resources.missing is not a data file here"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1, tags=[*["a"]])\n',
     "resources/x.py:2:65: `*items` is computed"),
    ('mug = shop.product(sku="mug", title="Mug", price_cents=1 j)\n', "resources/x.py:2:"),
]


@pytest.mark.parametrize(("text", "expected"), REFUSALS)
def test_each_refusal_is_a_problem_at_file_line_column(tmp_path, text, expected):
    result = read(tmp_path, {"resources/x.py": SHOP + text})
    found = problems(result)
    assert any(p.startswith(expected) for p in found), found


def test_a_resource_with_a_problem_is_left_out_with_its_dependants_and_the_others_load(tmp_path):
    result = read(tmp_path, {
        "resources/people.py": '''
            from changes.datafiles import sanoma

            ops = sanoma.group(name="")
            ada = sanoma.person(username="ada", email="not an email")
            bob = sanoma.person(username="bob", groups=[ops])
            cy = sanoma.person(username="cy")
        ''',
        "resources/roles.py": SHOP + '''
            from acme.resources.people import ada, bob, cy
            ada_admin = shop.staff_role(user=ada, role="admin")
            bob_admin = shop.staff_role(user=bob, role="admin")
            cy_admin = shop.staff_role(user=cy, role="admin")
        ''',
    })
    assert problems(result) == [
        "resources/people.py:3:25: ops: name: is the identity of a sanoma.group and may not be empty",
        "resources/people.py:4:43: ada: email: String should match pattern '^$|^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$'",
        "resources/people.py:5:45: bob: left out: it refers to ops, which is left out",
        "resources/roles.py:3:34: ada_admin: left out: it refers to resources/people.py#ada, which is left out",
        "resources/roles.py:4:34: bob_admin: left out: it refers to resources/people.py#bob, which is left out",
    ]
    assert names(result) == ["cy", "cy_admin"]
    assert [p.resource for p in result.problems] == [
        "resources/people.py#ops", "resources/people.py#ada", "resources/people.py#bob",
        "resources/roles.py#ada_admin", "resources/roles.py#bob_admin"]


class Node(BaseModel):
    name: str
    next: str | None = None
    links: list[str] = []


graph = define_connector("graph", {}, types=[define_resource(
    type="node", title="Node", identity="name", schema=Node, find=lambda d: d["name"],
    fields={"next": {"references": "graph.node"}, "links": {"references": "graph.node", "unordered": True}})])
GRAPH = "from changes.tests.test_datafiles import graph\n"


def test_a_reference_cycle_is_a_problem_for_each_resource_in_it(tmp_path):
    root = tree(tmp_path, {
        "resources/a.py": GRAPH + """from acme.resources.b import b
a = graph.node(name="a", next=b)
solo = graph.node(name="solo", links=["x", solo])
fine = graph.node(name="fine")
user = graph.node(name="u", links=[fine, a])
""",
        "resources/b.py": GRAPH + "from acme.resources.a import a\nb = graph.node(name='b', next=a)\n",
    })
    result = read_datafiles(root, [graph])
    assert problems(result) == [
        "resources/a.py:3:31: a: refers to itself: a -> resources/b.py#b -> a",
        "resources/a.py:4:44: solo: refers to itself: solo -> solo",
        "resources/a.py:6:42: user: left out: it refers to a, which is left out",
        "resources/b.py:3:31: b: refers to itself: b -> resources/a.py#a -> b",
    ]
    assert names(result) == ["fine"]


def test_two_resources_of_one_type_and_name_or_identity_are_declared_twice(tmp_path):
    result = read(tmp_path, {
        "resources/a.py": SHOP + 'mug = shop.product(sku="mug", title="Mug", price_cents=1)\n',
        "resources/b.py": SHOP + '''
            mug = shop.product(sku="mug-2", title="Mug", price_cents=1)
            cup = shop.product(sku="mug", title="Cup", price_cents=1)
            from changes.datafiles import sanoma
            ok = sanoma.group(name="mug")
        ''',
    })
    assert problems(result) == [
        "resources/b.py:2:1: mug: a shop.product named mug is declared twice, also as resources/a.py#mug",
        "resources/b.py:3:1: cup: declares the shop.product sku='mug' twice, also as resources/a.py#mug",
    ]
    assert [r.id for r in result.resources] == ["resources/a.py#mug", "resources/b.py#ok"]


def test_an_import_of_a_name_a_data_file_does_not_declare_is_refused_and_its_users_left_out(tmp_path):
    result = read(tmp_path, {
        "resources/a.py": 'from changes.datafiles import sanoma\nada = sanoma.person(username="ada")\n',
        "resources/b.py": SHOP + 'from acme.resources.a import bob\nrole = shop.staff_role(user=bob, role="admin")\n',
    })
    assert problems(result) == [
        "resources/b.py:2:30: acme.resources.a declares no bob (it declares ada)",
        "resources/b.py:3:29: left out: bob comes from an import that is refused (line 2)",
    ]
    assert names(result) == ["ada"]


def test_a_file_that_is_not_python_is_one_problem_and_the_others_load(tmp_path):
    result = read(tmp_path, {
        "resources/a.py": "mug = (\n",
        "resources/b.py": 'from changes.datafiles import sanoma\nops = sanoma.group(name="ops")\n',
        "resources/_private.py": "this is skipped\n",
        "resources/test_it.py": "this is skipped\n",
    })
    assert len(result.problems) == 1
    assert str(result.problems[0]).startswith("resources/a.py:1:")
    assert "the file is not valid Python" in str(result.problems[0])
    assert names(result) == ["ops"]
    assert result.files == ("resources/a.py", "resources/b.py")


def test_types_may_be_given_as_a_mapping(tmp_path):
    root = tree(tmp_path, {"resources/a.py": SHOP + 'mug = shop.product(sku="mug", title="M", price_cents=1)\n'
                                                    'r = shop.staff_role(user="ada", role="admin")\n'})
    result = read_datafiles(root, {"shop.product": shop.product})
    assert names(result) == ["mug"]
    assert problems(result) == ["resources/a.py:3:5: shop has no resource type staff_role; its types are product"]


def test_a_tree_without_data_files_reads_as_nothing(tmp_path):
    result = read_datafiles(tmp_path, [shop])
    assert (result.files, result.resources, result.problems) == ((), (), ())
