package registry_test

import (
	"testing"

	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/registry/registrytest"
)

func TestMemoryConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T, validate registry.Validator) registry.Registry {
		return registry.NewMemory(validate)
	})
}
