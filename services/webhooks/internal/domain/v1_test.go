package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIntegrationEventTypesAreSpecSix(t *testing.T) {
	require.Equal(t, []string{"messages.create", "messages.delivery.delivered", "messages.delivery.read",
		"messages.delivery.error", "connections.status_changed"}, IntegrationEventTypes)
}
