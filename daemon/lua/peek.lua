-- The earliest deadline and the time: the daemons' timer and health check.
return finish('OK', true)
