"""A scripted model that also streams: text word by word, tool calls whole, and steps that hang or fail."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from tests.capabilities.script import Script, Step


@dataclass
class Hang:
    """A step that streams `text` and then waits forever (until the run is cancelled)."""

    text: str


class StreamScript(Script):
    """`Script`, served to streaming runs too (the chat always streams when it has a text sink)."""

    def __init__(self, *steps: Step | Hang) -> None:
        super().__init__(*steps)  # type: ignore[arg-type]
        self.info: list[AgentInfo] = []  # what each request offered (tools, instructions)
        self.model = FunctionModel(self._respond, stream_function=self._stream)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.info.append(info)
        return super()._respond(messages, info)

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        step = self.steps[len(self.seen)] if len(self.seen) < len(self.steps) else None
        if isinstance(step, Hang):
            self.info.append(info)
            self.seen.append(list(messages))
            yield step.text
            await anyio.sleep_forever()
        response = self._respond(messages, info)
        for part in response.parts:
            if isinstance(part, TextPart):
                for word in re.findall(r"\s*\S+", part.content):
                    yield word
                    await anyio.sleep(0)
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if calls:
            yield {
                i: DeltaToolCall(
                    name=c.tool_name, json_args=c.args_as_json_str(), tool_call_id=c.tool_call_id
                )
                for i, c in enumerate(calls)
            }
