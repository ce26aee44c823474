// Package batch is the data contract between the scheduler and the model
// runner (vLLM's sched/output.py): the scheduler says which tokens of which
// requests to compute this step, the runner answers with sampled tokens.
//
// It imports only wire (for sampling parameters). It holds no logic.
//
//	b := s.Schedule()
//	res, err := r.Execute(ctx, b)
//	outs := s.Update(b, res)
package batch
