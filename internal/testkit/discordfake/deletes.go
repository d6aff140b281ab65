package discordfake

// DeleteMessage deletes a message the bot posted as a person with Manage
// Messages would, in the client: it is gone from the channel, GET, PATCH
// and DELETE of it answer 404 Unknown Message (10008), and MESSAGE_DELETE
// is dispatched. It reports whether there was such a message to delete.
func (s *Server) DeleteMessage(messageID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[messageID]
	if !ok || m.Deleted || m.Ephemeral() {
		return false
	}
	s.deletedLocked(m)
	return true
}
