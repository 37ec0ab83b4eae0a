-- wrk script: sign-in of an existing account (argon2 verification dominates).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"email":"bench@example.com","password":"bench"}'
