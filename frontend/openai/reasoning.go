package openai

import (
	"slices"
	"strings"
)

// The reasoning fields' values and defaults: the thinking budget (vLLM's
// and llama-server's names), llama-server's reasoning formats and vLLM's
// reasoning efforts.

// ThinkingBudget is the request's thinking budget: thinking_token_budget,
// else reasoning_budget_tokens, else thinking_budget_tokens (-1 in any is
// unset); nil when none is set (the server's --reasoning-budget applies).
func (p *Params) ThinkingBudget() *int {
	for _, b := range []*int{p.ThinkingTokenBudget, p.ReasoningBudgetTokens, p.ThinkingBudgetTokens} {
		if b != nil && *b != -1 {
			return b
		}
	}
	return nil
}

// ReasoningFormats are llama-server's reasoning formats: none leaves the
// think block in the content; auto and deepseek split it off as
// reasoning_content; deepseek-legacy splits it off and keeps it in the
// content too (streamed, it stays in the content only).
var ReasoningFormats = []string{"none", "auto", "deepseek", "deepseek-legacy"}

// ReasoningEfforts are the reasoning_effort values vLLM takes.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// CheckEffort returns a 400 for an effort that is not one of
// ReasoningEfforts; param names the field.
func CheckEffort(param string, effort *string) *Error {
	if effort == nil || slices.Contains(ReasoningEfforts, *effort) {
		return nil
	}
	return BadRequest(param, "'%s' must be one of %s, got %q.", param, strings.Join(ReasoningEfforts, ", "), *effort)
}
