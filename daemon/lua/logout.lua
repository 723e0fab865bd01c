-- LOGOUT: ARGV[5] servicer. Unknown: nothing to do, 0 requeued.
local s = servicer_load(ARGV[5])
if not s then return finish('OK', false, 0) end
local n = servicer_remove(s, 'logout')
return finish('OK', false, n)
