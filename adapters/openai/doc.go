// Package openai is the OpenAI-compatible model: a plugin.Model that sends
// chat completions through github.com/sashabaranov/go-openai.
//
// One base URL serves OpenAI itself and everything that speaks its API —
// Azure's v1 endpoint, Ollama, vLLM, llama.cpp's server, OpenRouter — so
// Config carries a base URL, a key (which may be empty for a local server)
// and a model name. Task iterations ask for structured output with a JSON
// Schema (response_format json_schema); free text asks for nothing. Not every
// server or model supports json_schema: when one answers 400 about the
// response_format, the call is made again with json_object and the schema in
// the prompt, then with the prompt alone, and the Model keeps to the mode that
// worked for the rest of the process (one log line each time it steps down).
//
// Transient failures (408, 409, 429, 5xx, a refused or dropped connection, a
// timeout) are retried with exponential backoff and jitter, honouring
// Retry-After, and waiting on an injected clock so tests drive the waits with
// clock.Fake. Client errors (400, 401, 403, 404, ...) are returned at once. A
// done context ends a call at once, whether a request is in flight or a retry
// is being waited for.
//
// Every failure is a *plugin.ModelError around an *Error: plugin.NewModelError
// sorts it (transient, permanent, or canceled by the caller), so the task
// service reads the class with errors.As and knows nothing of HTTP or
// go-openai.
package openai
