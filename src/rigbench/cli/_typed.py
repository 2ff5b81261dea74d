"""A typer command made from a typed options model: each field (with its `rig.Flag` help) is one option,
declared once, and the command's body gets the model, validated, instead of one parameter each.

A field that is itself a model without a `Flag` (`RunOptions.rig`) is spread flat on the command line
and gathered back into its model.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rigbench.errors import UsageError
from rigbench.inputs import explain, shown
from rigbench.rig import Flag

__all__ = ["options_command", "options_from_params", "params_of"]

M = TypeVar("M", bound=BaseModel)


def _flag(info: FieldInfo) -> Flag | None:
    return next((m for m in info.metadata if isinstance(m, Flag)), None)


def _nested(info: FieldInfo) -> type[BaseModel] | None:
    ann = info.annotation
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) and _flag(info) is None else None


def _leaves(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo, Flag]]:
    for name, info in model.model_fields.items():
        sub = _nested(info)
        if sub is not None:
            yield from _leaves(sub)
            continue
        flag = _flag(info)
        if flag is None:
            raise TypeError(f"{model.__name__}.{name} has no Flag: give it its help (rigbench.rig.Flag)")
        yield name, info, flag


def _parameter(name: str, info: FieldInfo, flag: Flag) -> inspect.Parameter:
    if flag.argument:
        param: Any = typer.Argument(help=flag.help, **flag.extra)
    else:
        param = typer.Option(*flag.decls, help=flag.help, **flag.extra)
    # a list's default (a fresh one per model) is "not given" on the command line
    default = None if info.default is PydanticUndefined else info.default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[info.annotation, param])


def options_from_params(model: type[M], params: dict[str, Any]) -> M:
    """The model from the command's parameters by name (flat); None is "not given" (the default)."""
    def gather(m: type[BaseModel]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, info in m.model_fields.items():
            sub = _nested(info)
            if sub is not None:
                out[name] = gather(sub)
            elif params.get(name) is not None:
                out[name] = params[name]
        return out

    try:
        return model.model_validate(gather(model))
    except ValidationError as e:  # typer has typed them already; a hand-edited run.json may not have
        err = e.errors()[0]
        flag = "--" + str(err["loc"][-1]).rstrip("_").replace("_", "-")
        raise UsageError(f"{flag}: {explain(err)}; got {shown(err['input'])}.") from None


def params_of(options: BaseModel) -> dict[str, Any]:
    """The command's parameters by name (flat), as the model holds them: the inverse of `options_from_params`."""
    out: dict[str, Any] = {}
    for name, info in type(options).model_fields.items():
        value = getattr(options, name)
        if _nested(info) is not None:
            out.update(params_of(value))
        else:
            out[name] = value
    return out


def options_command(model: type[M]) -> Callable[[Callable[[typer.Context | None, M], None]], Callable[..., None]]:
    """Decorate `body(ctx, options)`: the result is a typer command with one option per field of `model`."""
    def wrap(body: Callable[[typer.Context | None, M], None]) -> Callable[..., None]:
        def command(ctx: typer.Context, **params: Any) -> None:
            body(ctx, options_from_params(model, params))

        params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
        params += [_parameter(*leaf) for leaf in _leaves(model)]
        # typer reads the signature (and the name, for the command's name; the docstring, for its help)
        setattr(command, "__signature__", inspect.Signature(params))  # noqa: B010
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__, command.__qualname__, command.__doc__ = body.__name__, body.__qualname__, body.__doc__
        command.__module__ = body.__module__
        return command

    return wrap
