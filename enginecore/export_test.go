package enginecore

// SetCompiler makes c's engine compile constraints with wrap(its own
// compiler): tests hold a compile until they have seen what they wait
// for. Call it before Serve.
func SetCompiler(c *Core, wrap func(Compiler) Compiler) { c.eng.compiler = wrap(c.eng.compiler) }
