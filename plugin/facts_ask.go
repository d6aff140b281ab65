package plugin

import "encoding/json"

// FactsSchemaName names the structured output of a request for durable
// facts (the facts evaluator's, docs/memory.md). Its user message is a
// FactsAsk as JSON, and the answer a FactsAnswer: so the demo model can
// answer it by rule, without a key.
const FactsSchemaName = "durable_facts"

// ActionChoiceSchemaName names the structured output of the chat
// pipeline's request for an action (or a reply) to an addressed message.
const ActionChoiceSchemaName = "action_choice"

// FactsSchema is the JSON Schema of a FactsAnswer.
var FactsSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["facts"],"properties":{"facts":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["text","about","sources"],"properties":{"text":{"type":"string"},"about":{"type":"string"},"sources":{"type":"array","items":{"type":"integer"}}}}}}}`)

// FactsAsk is the conversation a model is asked to draw facts from.
type FactsAsk struct {
	Room     string         `json:"room"`
	Messages []FactsMessage `json:"messages"`
}

// FactsMessage is one message of a FactsAsk: its memory ID (what a fact
// cites as a source), who wrote it and what it says.
type FactsMessage struct {
	ID       int64  `json:"id"`
	AuthorID string `json:"author_id"`
	Author   string `json:"author"`
	FromBot  bool   `json:"from_bot,omitempty"`
	Text     string `json:"text"`
}

// FactsAnswer is the facts a model drew from a FactsAsk.
type FactsAnswer struct {
	Facts []DrawnFact `json:"facts"`
}

// DrawnFact is one durable fact as the model states it: the sentence,
// the author ID of the person it is about ("" for none) and the IDs of
// the messages it comes from.
type DrawnFact struct {
	Text    string  `json:"text"`
	About   string  `json:"about"`
	Sources []int64 `json:"sources"`
}
