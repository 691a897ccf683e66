"""The scheduling queue: upstream's backend/queue, beside the actor that owns it.

- scheduling_queue.py  SchedulingQueue (activeQ, backoffQ, unschedulable pool, in-flight events)
- heap.py              the keyed heap behind activeQ and backoffQ
- backoff_queue.py     backoff durations and the backoffQ order
- nominator.py         pods nominated to nodes by preemption (owned by the Scheduler actor)
- actor.py             QueueActor: the only owner of a SchedulingQueue; others hold its ref and send it messages
"""
