package pjrt

// This file is a patch of nioc-gpu's vendored copy of go-xla v0.1.4 (third_party/README.md).
// It wraps the PJRT C API's executable serialization, which go-xla v0.1.4 declares but does
// not expose, so that a compiled program can be kept on disk and loaded by a later process
// instead of being compiled again.

/*
#include <stdlib.h>
#include <string.h>
#include "pjrt_c_api.h"
#include "gen_api_calls.h"
#include "gen_new_struct.h"

// serializeExecutable copies the serialization of executable into a malloc'ed buffer (*out,
// *size), which the caller frees, and releases the plugin's own copy.
static PJRT_Error* serializeExecutable(const PJRT_Api *api, PJRT_Executable *executable, char **out, size_t *size) {
	PJRT_Executable_Serialize_Args *args = new_PJRT_Executable_Serialize_Args();
	args->executable = executable;
	PJRT_Error *err = call_PJRT_Executable_Serialize(api, args);
	if (err) {
		free(args);
		return err;
	}
	*size = args->serialized_bytes_size;
	*out = malloc(*size > 0 ? *size : 1);
	memcpy(*out, args->serialized_bytes, *size);
	if (args->serialized_executable_deleter) {
		args->serialized_executable_deleter(args->serialized_executable);
	}
	free(args);
	return NULL;
}
*/
import "C"
import (
	"runtime"
	"unsafe"

	"github.com/pkg/errors"
)

// Serialize returns the plugin's serialization of the compiled program, which
// Client.DeserializeAndLoad of the same plugin (platform and version) turns back into a
// LoadedExecutable. Plugins that cannot serialize return an error.
func (e *LoadedExecutable) Serialize() ([]byte, error) {
	if e == nil || e.plugin == nil || e.executable == nil || e.executable.wrapper == nil {
		return nil, errors.New("LoadedExecutable is nil or destroyed")
	}
	defer runtime.KeepAlive(e)
	var out *C.char
	var size C.size_t
	if err := toError(e.plugin, C.serializeExecutable(e.plugin.api, e.executable.wrapper.c, &out, &size)); err != nil {
		return nil, errors.WithMessage(err, "serializing the executable")
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(size)), nil
}

// DeserializeAndLoad loads an executable serialized by LoadedExecutable.Serialize with the
// compile options it was compiled with. portable says whether it was compiled as a portable
// (single-device, any device) executable, as CompileConfig.Done records for the executables it
// compiles. The serialization must come from the same plugin (platform and version): others
// fail or, for some plugins, crash, so callers key what they store by the plugin.
func (c *Client) DeserializeAndLoad(serialized []byte, portable bool) (*LoadedExecutable, error) {
	if c == nil || c.plugin == nil || c.client == nil {
		return nil, errors.New("Client is nil or destroyed")
	}
	if len(serialized) == 0 {
		return nil, errors.New("DeserializeAndLoad: empty serialization")
	}
	args := C.new_PJRT_Executable_DeserializeAndLoad_Args()
	defer cFree(args)
	data := C.CBytes(serialized)
	defer C.free(data)
	args.client = c.client.c
	args.serialized_executable = (*C.char)(data)
	args.serialized_executable_size = C.size_t(len(serialized))
	if err := toError(c.plugin, C.call_PJRT_Executable_DeserializeAndLoad(c.plugin.api, args)); err != nil {
		return nil, errors.WithMessage(err, "deserializing the executable")
	}
	exec, err := newLoadedExecutable(c.plugin, c, args.loaded_executable)
	if err != nil {
		return nil, err
	}
	exec.numReplicas, exec.numPartitions, exec.isPortable = 1, 1, portable
	return exec, nil
}

// Kind returns the vendor's name of the kind of device, e.g. "NVIDIA H100 80GB HBM3": part of
// what a serialized executable must be keyed by, since it is compiled for one kind.
func (dDesc *DeviceDescription) Kind() (string, error) {
	args := C.new_PJRT_DeviceDescription_Kind_Args()
	defer cFree(args)
	args.device_description = dDesc.deviceDescription
	if err := toError(dDesc.plugin, C.call_PJRT_DeviceDescription_Kind(dDesc.plugin.api, args)); err != nil {
		return "", err
	}
	return cCharArray(args.device_kind, args.device_kind_size), nil
}
