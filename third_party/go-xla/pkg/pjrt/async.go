package pjrt

// This file is a patch of nioc-gpu's vendored copy of go-xla v0.1.4 (third_party/README.md).
// go-xla v0.1.4's ExecutionConfig.Done waits for the device to finish every execution; with
// asynchronous execution it returns once the execution is enqueued, as JAX dispatches.

// SetAsyncExecution sets whether LoadedExecutable executions of this client return as soon as
// they are enqueued (on) or once the device has finished them (off, go-xla's default). An
// asynchronous execution's outputs are buffers whose contents the device is still writing:
// executions that take them as inputs are ordered after it by PJRT, and copying them to the
// host (Buffer.ToHost) waits for them, returning any error of the execution. Reading a buffer's
// memory directly (Buffer.Data of a host-shared buffer, as on the CPU plugin with shared
// buffers) does not wait: do not turn this on where buffers are shared with the host.
func (c *Client) SetAsyncExecution(on bool) {
	c.asyncExecution = on
}
