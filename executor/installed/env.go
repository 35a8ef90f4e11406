package installed

import (
	"maps"
	"strings"

	"github.com/mediated-coevo/harness/config"
)

// Environment variables an installed agent is given.
const (
	EnvBaseURL = "HARNESS_MODEL_BASE_URL"
	EnvModel   = "HARNESS_MODEL"
)

// Env is the agent's environment for a gateway at url (scheme, host and
// port): the base URL under the harness's name and under the one its API
// shape's clients read (OpenAI's ends in /v1, Anthropic's and Gemini's do
// not: their clients add the version), the model, and the trial's token in
// the shape's key variable. The agent's own env comes first, so none of
// these can be overridden.
func (a *Agent) Env(url, model, token string) map[string]string {
	env := maps.Clone(a.Spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	url = strings.TrimRight(url, "/")
	env[EnvModel] = model
	switch a.Spec.API {
	case config.APIAnthropic:
		env[EnvBaseURL] = url
		env["ANTHROPIC_BASE_URL"] = url
		env["ANTHROPIC_API_KEY"] = token
		return env
	case config.APIGemini:
		// GOOGLE_GEMINI_BASE_URL is read by Google's Node SDK
		// (@google/genai), which Gemini CLI calls the model through.
		env[EnvBaseURL] = url
		env["GOOGLE_GEMINI_BASE_URL"] = url
		env["GEMINI_API_KEY"] = token
		return env
	}
	env[EnvBaseURL] = url + "/v1"
	env["OPENAI_BASE_URL"] = url + "/v1"
	env["OPENAI_API_KEY"] = token
	return env
}

// Render fills a command template. Each value is inserted as one shell
// word, quoted, so an instruction with quotes or newlines stays one
// argument.
func Render(template, instructionFile, instruction, model, workdir string) string {
	return strings.NewReplacer(
		"{instruction_file}", shellQuote(instructionFile),
		"{instruction}", shellQuote(instruction),
		"{model}", shellQuote(model),
		"{workdir}", shellQuote(workdir),
	).Replace(template)
}

// shellQuote is s as one single-quoted shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
