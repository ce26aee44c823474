package chattemplate

import "testing"

// TestBuiltins renders each built-in template on one conversation and
// compares with what llama.cpp's formatter (llm_chat_apply_template)
// writes for that name.
func TestBuiltins(t *testing.T) {
	msgs := []Object{
		{{Key: "role", Value: "system"}, {Key: "content", Value: "You are a test."}},
		{{Key: "role", Value: "user"}, {Key: "content", Value: "Hi there"}},
		{{Key: "role", Value: "assistant"}, {Key: "content", Value: "Hello"}},
		{{Key: "role", Value: "user"}, {Key: "content", Value: "Who are you"}},
	}
	want := map[string]string{
		"chatml":     "<|im_start|>system\nYou are a test.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n",
		"llama3":     "<|start_header_id|>system<|end_header_id|>\n\nYou are a test.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"command-r":  "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a test.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi there<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are you<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
		"gemma":      "<start_of_turn>user\nYou are a test.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n",
		"phi3":       "<|system|>\nYou are a test.<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\nHello<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n",
		"phi4":       "<|im_start|>system<|im_sep|>You are a test.<|im_end|><|im_start|>user<|im_sep|>Hi there<|im_end|><|im_start|>assistant<|im_sep|>Hello<|im_end|><|im_start|>user<|im_sep|>Who are you<|im_end|><|im_start|>assistant<|im_sep|>",
		"zephyr":     "<|system|>\nYou are a test.<|endoftext|>\n<|user|>\nHi there<|endoftext|>\n<|assistant|>\nHello<|endoftext|>\n<|user|>\nWho are you<|endoftext|>\n<|assistant|>\n",
		"falcon3":    "<|system|>\nYou are a test.\n<|user|>\nHi there\n<|assistant|>\nHello\n<|user|>\nWho are you\n<|assistant|>\n",
		"mistral-v7": "[SYSTEM_PROMPT] You are a test.[/SYSTEM_PROMPT][INST] Hi there[/INST] Hello</s>[INST] Who are you[/INST]",
		"deepseek3":  "You are a test.<｜User｜>Hi there<｜Assistant｜>Hello<｜end▁of▁sentence｜><｜User｜>Who are you<｜Assistant｜>",
		"vicuna":     "You are a test.\nUSER: Hi there\nASSISTANT: Hello</s>\nUSER: Who are you\nASSISTANT:",
	}
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			src, ok := Builtin(name)
			if !ok {
				t.Fatal("listed but missing")
			}
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expected output for %s", name)
			}
			tpl, err := New(src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.RenderMessages(msgs, true, nil)
			if err != nil || got != w {
				t.Errorf("got %q, %v\nwant %q", got, err, w)
			}
		})
	}
	if _, ok := Builtin("no-such-template"); ok {
		t.Error("an unknown name is built in")
	}
}
