package httpapi

import (
	"net/http"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// strategies lists the strategies a task may be created with: the task
// service's (plugin.StrategyLister), loop first, the default — what
// POST /api/tasks accepts as strategy and the dashboard's picker offers.
// Only loop when the service lists none.
func (a *API) strategies(w http.ResponseWriter, _ *http.Request) {
	names := []string{domain.StrategyLoop}
	if l, ok := a.o.Tasks.(plugin.StrategyLister); ok {
		if s := l.Strategies(); len(s) > 0 {
			names = s
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"strategies": names})
}
