package slackfake

// DeleteMessage deletes one of the app's posts as a workspace admin
// would, in the client: it is gone from the channel and its history, and
// chat.update and chat.delete of it answer message_not_found. It reports
// whether there was such a message to delete.
func (s *Server) DeleteMessage(channel, ts string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.messages {
		if m.Kind == KindPost && m.Channel == channel && m.TS == ts && !m.Deleted {
			m.Deleted = true
			s.notifyLocked()
			return true
		}
	}
	return false
}
