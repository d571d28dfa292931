"""The models of the operations every resource type derives (`import`, `read`, `create`, `update`,
`delete`) and of what they answer (`Observed`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, create_model, model_validator

from connectors.resources.values import ModelClass

if TYPE_CHECKING:
    from connectors.resources.resource_type import ResourceType


class ImportInput(BaseModel):
    id: str = Field(min_length=1, description="the import id: what the type's find(desired) answers")


class ReadInput(BaseModel):
    id: str = Field(min_length=1)
    handle: str | None = None


class CreateInput(BaseModel):
    desired: dict[str, Any]


class UpdateInput(BaseModel):
    id: str = Field(min_length=1)
    handle: str | None = None
    changes: dict[str, Any]
    desired: dict[str, Any]


class DeleteInput(BaseModel):
    id: str = Field(min_length=1)
    handle: str | None = None


class Observed(BaseModel):
    """An instance as the vendor holds it, or `gone`."""

    id: str
    gone: bool = False
    handle: str | None = None
    values: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Observed:
        if self.gone and (self.handle is not None or self.values):
            raise ValueError("a gone instance has no handle and no values")
        if not self.gone and not self.handle:
            raise ValueError("an instance that is there needs its handle")
        return self


def _derived_models(rt: ResourceType) -> dict[str, ModelClass]:
    """Per type: `create` and `update` inputs that check `desired` (and `changes`) against the schema."""
    stem = "".join(part.capitalize() for part in f"{rt.vendor}_{rt.name}".replace("-", "_").split("_"))

    def check_create(self: Any) -> Any:
        rt.check_desired(self.desired)
        return self

    def check_update(self: Any) -> Any:
        rt.check_desired(self.desired)
        rt.check_changes(self.changes, self.desired)
        return self

    validators: dict[str, Any] = {"_check": model_validator(mode="after")(check_create)}
    create = create_model(f"{stem}Create", __base__=CreateInput, __validators__=validators)
    validators = {"_check": model_validator(mode="after")(check_update)}
    update = create_model(f"{stem}Update", __base__=UpdateInput, __validators__=validators)
    return {"import": ImportInput, "read": ReadInput, "create": create, "update": update, "delete": DeleteInput,
            "output": Observed}
