module ufcctl.lab/addon-standin

go 1.24.0
