"""Where a record's numbers came from, as a frozen model: host, software stack, commit, image, runtime
environment and when (`harness.provenance` collects them). A field is written only when it was found
(never a guessed null), a fact no field names yet is kept as found, and every published record reads and
writes back key for key.
"""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from harness.json_types import JsonObject


class Facts(BaseModel):
    # Extra facts are kept as found: a collector may learn a fact before this model names it.
    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True, serialize_by_alias=True)

    @model_serializer(mode="wrap")
    def _found_only(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        data: JsonObject = handler(self)
        fields = self.__class__.model_fields
        found = {fields[name].alias or name if name in fields else name for name in self.model_fields_set}
        return {key: value for key, value in data.items() if key in found}

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The schema of the fields: the serializer above leaves keys out, it adds and renames none.
        return handler({key: value for key, value in schema.items() if key != "serialization"})  # type: ignore[misc]


class CpuFacts(Facts):
    arch: str | None = None
    logical_cores: int | None = None
    model: str | None = None
    isa: str | None = Field(None, description="instruction tier from /proc/cpuinfo: amx, avx512bf16, …")
    bf16: str | None = Field(None, description="the cpuinfo flag that gives bf16 in hardware, if any")


class GpuFacts(Facts):
    index: int
    name: str
    arch: str | None = None
    vram_bytes: int | None = None
    multiprocessors: int | None = None


class HostFacts(Facts):
    cpu: CpuFacts = CpuFacts()
    ram_bytes: int | None = None
    kernel: str | None = None
    system: str | None = None
    python: str | None = None
    runtime: str | None = Field(None, description="the GPU runtime torch was built for: cuda, hip or cpu")
    runtime_version: str | None = None
    gpus: list[GpuFacts] = Field(default_factory=list)
    driver: str | None = None
    machine_gpus: int | None = Field(None, description="GPUs in the machine, visible to this run or not")
    hidden_gpus: str | None = Field(None, description="integrated GPUs hidden from HIP before the run")
    id: str | None = Field(None, description="harness.provenance.host_id: the record's `host`")
    kind: str | None = Field(None, description="harness.provenance.host_kind: the fingerprint's host")


class StackFacts(Facts):
    name: str | None = None
    pinned: bool | None = Field(None, description="a stack of lockfiles/stacks.toml (harness/stack_name.py)")
    packages: dict[str, str] = Field(default_factory=dict)
    lockfile: str | None = None
    lockfile_sha256: str | None = None
    image: str | None = None
    image_digest: str | None = None
    base_image: str | None = None


class GitFacts(Facts):
    sha: str | None = None
    dirty: bool | None = None
    source: str | None = Field(
        None, alias="from", description="'image build': baked in when the image was built"
    )


class ImageFacts(Facts):
    name: str | None = None
    digest: str | None = None
    base: str | None = None
    in_container: bool | None = None
    guard_sees_host: bool | None = None
    digest_missing: str | None = None


class PlacementFacts(Facts):
    devices: str | None = Field(
        None,
        description="the devices the run was given: 'cpu', or GPUs as the visibility variable names them",
    )
    shared_by: int | None = Field(
        None, description="runs placed on those devices at once (the suite's workers per device); 1: alone"
    )
    mps: bool | None = Field(
        None,
        description="true: the run's trainer went through the suite's CUDA MPS server (harness/gpu/mps.py)",
    )


class Provenance(Facts):
    host: HostFacts = HostFacts()
    stack: StackFacts = StackFacts()
    git: GitFacts = GitFacts()
    environment: dict[str, str] | None = Field(
        None,
        description="allocator and runtime variables that change a figure, as set in the run "
        "(harness.provenance.ENVIRONMENT; unset ones left out). Absent: made before they were recorded",
    )
    collected: str | None = None
    image: ImageFacts | None = None
    placement: PlacementFacts | None = Field(
        None, description="where the suite placed the run (harness/run/plan.py Placement); absent: not placed"
    )
