"""AdaptMMBench (SPEC section 4): visual tools, tool-call parsing, the text/adaptive/oracle loop, item
loading and the metrics (tool labels, MCC, key-step coverage, tool effectiveness). Pure core: no Ray.
"""
from howeval.benchmarks.adapt.items import AdaptItem, load_adapt_items, parse_item
from howeval.benchmarks.adapt.loop import (
    ADAPT_MODES,
    AdaptiveResult,
    AdaptPrompts,
    CallRecord,
    run_adaptive,
    run_adaptive_batch,
)
from howeval.benchmarks.adapt.metrics import (
    confusion,
    key_step_coverage,
    mcc,
    summarize,
    tool_effectiveness,
    tool_labels,
)
from howeval.benchmarks.adapt.toolcalls import (
    ToolCall,
    parse_openai_tool_calls,
    parse_text_tool_calls,
    parse_tool_calls,
)
from howeval.benchmarks.adapt.tools import TOOL_SCHEMAS, TOOLS, ToolResult, make_variant, run_tool, transform_boxes

__all__ = [
    "ADAPT_MODES", "AdaptItem", "AdaptPrompts", "AdaptiveResult", "CallRecord", "TOOLS", "TOOL_SCHEMAS",
    "ToolCall", "ToolResult", "confusion", "key_step_coverage", "load_adapt_items", "make_variant", "mcc",
    "parse_item", "parse_openai_tool_calls", "parse_text_tool_calls", "parse_tool_calls", "run_adaptive",
    "run_adaptive_batch", "run_tool", "summarize", "tool_effectiveness", "tool_labels",
    "transform_boxes",
]
