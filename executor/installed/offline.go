package installed

import "github.com/mediated-coevo/harness/llm"

// OfflineAnswer is what the gateway answers every call of an offline run:
// plain text and no tool call, which ends an agent's turn, so an installed
// agent runs through its whole trial without a model.
const OfflineAnswer = "Offline run: no model answers. Stop here without further steps."

// OfflinePlayer answers an installed agent's calls offline.
func OfflinePlayer(int64, llm.Request) (llm.Message, error) {
	return llm.Message{Role: llm.RoleAssistant, Content: OfflineAnswer}, nil
}
