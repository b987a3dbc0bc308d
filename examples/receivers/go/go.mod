module example.com/switchyard-receiver

go 1.21
