package chattemplate

import (
	"maps"
	"slices"
)

// Built-in templates: the names llama-server's --chat-template takes
// (llama.cpp's llm_chat_template names), as Jinja that renders what
// llama.cpp's own formatter writes for them, so `--chat-template llama3`
// works as it does there. A model's own template (or a file) is always
// preferred; these are for GGUFs without one and for command lines
// written for llama-server.
var namedTemplates = map[string]string{
	"chatml": `{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
	"llama3": `{% for m in messages %}{{ '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + (m.content | trim) + '<|eot_id|>' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`,
	"command-r": `{% for m in messages %}{% if m.role == 'system' %}{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' }}` +
		`{% elif m.role == 'user' %}{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' }}{% else %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}` +
		`{{ (m.content | trim) + '<|END_OF_TURN_TOKEN|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}`,
	// Gemma has no system role: a system message opens the next turn.
	"gemma": `{% set ns = namespace(system='') %}{% for m in messages %}{% if m.role == 'system' %}{% set ns.system = ns.system + (m.content | trim) + '\n\n' %}` +
		`{% else %}{{ '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + '\n' + ns.system + (m.content | trim) + '<end_of_turn>\n' }}{% set ns.system = '' %}{% endif %}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}`,
	"phi3": `{% for m in messages %}{{ '<|' + m.role + '|>\n' + m.content + '<|end|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}`,
	"phi4": `{% for m in messages %}{{ '<|im_start|>' + m.role + '<|im_sep|>' + m.content + '<|im_end|>' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}`,
	"zephyr": `{% for m in messages %}{{ '<|' + m.role + '|>\n' + m.content + '<|endoftext|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}`,
	"falcon3": `{% for m in messages %}{{ '<|' + m.role + '|>\n' + m.content + '\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}`,
	"mistral-v7": `{% for m in messages %}{% if m.role == 'system' %}{{ '[SYSTEM_PROMPT] ' + m.content + '[/SYSTEM_PROMPT]' }}` +
		`{% elif m.role == 'user' %}{{ '[INST] ' + m.content + '[/INST]' }}{% else %}{{ ' ' + m.content + '</s>' }}{% endif %}{% endfor %}`,
	"deepseek3": `{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}{% elif m.role == 'user' %}{{ '<｜User｜>' + m.content }}` +
		`{% else %}{{ '<｜Assistant｜>' + m.content + '<｜end▁of▁sentence｜>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<｜Assistant｜>' }}{% endif %}`,
	"vicuna": `{% for m in messages %}{% if m.role == 'system' %}{{ m.content + '\n' }}{% elif m.role == 'user' %}{{ 'USER: ' + m.content + '\n' }}` +
		`{% else %}{{ 'ASSISTANT: ' + m.content + '</s>\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}`,
}

// Builtin is the built-in template of a llama.cpp template name
// (BuiltinNames), and whether there is one.
func Builtin(name string) (string, bool) {
	src, ok := namedTemplates[name]
	return src, ok
}

// BuiltinNames are the built-in templates' names, sorted.
func BuiltinNames() []string { return slices.Sorted(maps.Keys(namedTemplates)) }
