print("container checks: TODO")
