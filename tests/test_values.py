"""quick_init: a frozen dataclass made for less is the same value as the one dataclasses makes."""

import copy
import dataclasses
import inspect
import pickle
from dataclasses import InitVar, dataclass, field

import pytest

from robotsgate.decision.plan import Forward, Who
from robotsgate.decision.request import Facts
from robotsgate.decision.verdict import Request, Verdict
from robotsgate.values import quick_init


@dataclass(frozen=True, slots=True)
class Plain:
    name: str
    size: int = 3
    tags: tuple[str, ...] = ()
    note: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class Quick:
    name: str
    size: int = 3
    tags: tuple[str, ...] = ()
    note: str | None = None


@pytest.mark.parametrize(("args", "kwargs"), [
    (("a",), {}),
    (("a", 5), {"note": "n"}),
    ((), {"name": "b", "tags": ("x", "y")}),
    (("c", 1, ("t",), "z"), {}),
])
def test_made_with_the_same_fields_and_defaults(args: tuple[object, ...],
                                                kwargs: dict[str, object]) -> None:
    plain, quick = Plain(*args, **kwargs), Quick(*args, **kwargs)  # type: ignore[arg-type]

    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert repr(quick) == repr(plain).replace("Plain", "Quick")
    assert hash(quick) == hash(Quick(*args, **kwargs))  # type: ignore[arg-type]
    assert quick == Quick(*args, **kwargs)  # type: ignore[arg-type]
    assert quick != Quick("other")


def test_the_signature_is_the_dataclass_one() -> None:
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick("a", 1, (), None, "one too many")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick("a", nope=1)  # type: ignore[call-arg]


def test_still_frozen_and_copied_as_before() -> None:
    quick = Quick("a", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.size = 4  # type: ignore[misc]
    assert dataclasses.replace(quick, size=4) == Quick("a", 4)
    assert copy.deepcopy(quick) == quick and copy.copy(quick) == quick
    assert pickle.loads(pickle.dumps(quick)) == quick
    assert not hasattr(quick, "__dict__")


@pytest.mark.parametrize("cls", [Facts, Who, Request, Verdict, Forward])
def test_the_values_made_for_every_request_are_quick_and_frozen(cls: type) -> None:
    init = vars(cls)["__init__"]
    assert init.__code__.co_filename == "<string>"
    assert "_quick_set0" in init.__code__.co_names
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def _refused(make: object) -> str:
    with pytest.raises(TypeError) as refused:
        make()  # type: ignore[operator]
    return str(refused.value)


def test_what_it_cannot_make_as_the_dataclass_would_is_refused_at_import() -> None:
    def mutable() -> None:
        @quick_init
        @dataclass(slots=True)
        class Mutable:
            x: int

    def no_slots() -> None:
        @quick_init
        @dataclass(frozen=True)
        class NoSlots:
            x: int

    def factory() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class Factory:
            x: list[int] = field(default_factory=list)

    def keyword_only() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True, kw_only=True)
        class KeywordOnly:
            x: int

    def not_in_init() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class NotInInit:
            x: int = field(default=0, init=False)

    def post_init() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class PostInit:
            x: int

            def __post_init__(self) -> None:
                pass

    def init_var() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class WithInitVar:
            x: int
            y: InitVar[int] = 0

    def own_init() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class OwnInit:
            x: int

            def __init__(self, x: int) -> None:
                object.__setattr__(self, "x", abs(x))

    def no_init() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True, init=False)
        class NoInit:
            x: int = 0

    def inherited() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class Child(Quick):
            extra: int = 0

    def clashing() -> None:
        @quick_init
        @dataclass(frozen=True, slots=True)
        class Clashing:
            _quick_set1: int

    assert "the __init__ dataclasses wrote" in _refused(own_init)
    assert "the __init__ dataclasses wrote" in _refused(no_init)
    assert "Child.name" in _refused(inherited)
    assert "Clashing._quick_set1" in _refused(clashing)
    assert "frozen, slotted" in _refused(mutable)
    assert "frozen, slotted" in _refused(no_slots)
    assert "Factory.x" in _refused(factory)
    assert "KeywordOnly.x" in _refused(keyword_only)
    assert "NotInInit.x" in _refused(not_in_init)
    assert "__post_init__" in _refused(post_init)
    assert "__post_init__" in _refused(init_var)
