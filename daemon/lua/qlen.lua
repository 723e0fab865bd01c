-- QLEN: ARGV[5] queue.
return finish('OK', false, redis.call('ZCARD', queue_key(ARGV[5])))
