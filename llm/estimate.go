package llm

import "encoding/json"

// charsPerToken is the estimate's ratio: about four characters of English
// text or code per token for the tokenizers of current chat models. It
// errs on neither side by much for prose and code, and needs no tokenizer.
const charsPerToken = 4

// charTokens estimates the tokens of n characters of text, as
// EstimateTokens does for a transcript.
func charTokens(n int) int64 {
	if n <= 0 {
		return 0
	}
	return int64((n + charsPerToken - 1) / charsPerToken)
}

// RequestTokens estimates the input tokens of a request from its text, for
// a provider whose endpoint reported no usage for it.
func RequestTokens(req Request) int64 { return charTokens(requestChars(req)) }

// AnswerTokens estimates the output tokens of an answer from its text, for
// a provider whose endpoint reported no usage for it.
func AnswerTokens(m Message) int64 { return charTokens(messageChars(m)) }

// requestChars is the length of what a request sends the model: messages,
// tool calls, tool definitions and the answer's schema.
func requestChars(req Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Role) + len(m.Content) + len(m.Name)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description)
		if b, err := json.Marshal(t.Parameters); err == nil {
			n += len(b)
		}
	}
	if req.Schema != nil {
		if b, err := json.Marshal(req.Schema); err == nil {
			n += len(b)
		}
	}
	return n
}

// messageChars is the length of an answer: its text and tool calls.
func messageChars(m Message) int {
	n := len(m.Content)
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + len(tc.Arguments)
	}
	return n
}
