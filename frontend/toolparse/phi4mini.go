package toolparse

// The phi4_mini_json format (Phi-4-mini-instruct with vLLM's
// tool_chat_template_phi4_mini.jinja, and FireFunction v2, whose template
// asks the same): the marker functools, then the calls as a JSON list of
// call objects, with no closing marker:
//
//	functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]
//
// As vLLM's parser reads it, "functools[" opens the list anywhere in the
// text (nothing may stand between functools and '['), and a call has
// "arguments" or "parameters". Unlike vLLM, which drops the text around
// the list, cuts the list at its first ']' and does not stream the calls,
// the list is read as JSON (']' inside strings and nested arrays is
// fine), content before and after it stays content, calls stream, and a
// call without arguments gets {}. The list is read as granite's is
// (callList): "[]" or a list of anything but call objects is content.

const phi4MiniMarker = "functools["

func newPhi4Mini(tools map[string]bool) Parser {
	return newCallList(tools, listSyntax{markers: []string{phi4MiniMarker}})
}
